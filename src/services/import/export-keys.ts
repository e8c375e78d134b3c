import { notFound } from "../../domain/errors.ts";
import { parseNamed } from "../../domain/scope/identifier.ts";
import type { ImportLine } from "../../domain/import/import-line.ts";
import type { KeyType } from "../../domain/model.ts";
import type { Author } from "../../domain/keys/key-event.ts";
import { entityFind, TABLES } from "../../store/directory/directory.ts";
import { eventRecordExport } from "../../store/keys/key-events.ts";
import { keyExportPage, type ExportNarrowing } from "../../store/import/import-keys.ts";
import type { ImportNeeds } from "./needs.ts";

const PAGE_SIZE = 1_000;

/** An exported key: the import's line form, every field written out. */
export type ExportedLine = Omit<ImportLine, "createdAt" | "expiresAt" | "type"> & { type: KeyType; createdAt: Date; expiresAt: Date | null };

/** The customer, and the domain within it, that an export is narrowed to; 404 for one that does not exist. */
export async function exportNarrowing(needs: Pick<ImportNeeds, "db">, customer?: string, domain?: string): Promise<ExportNarrowing> {
  if (customer === undefined) return {};
  const c = await entityFind(needs.db, TABLES.customers, parseNamed(customer), null);
  if (!c) throw notFound("No such customer.");
  if (domain === undefined) return { tenantId: c.id };
  const d = await entityFind(needs.db, TABLES.domains, parseNamed(domain), c.id);
  if (!d) throw notFound("No such domain.");
  return { tenantId: c.id, domainId: d.id };
}

/**
 * Every live key within `narrowing`, in the import's line form, by id: read in keyset pages, the next
 * asked for as soon as one arrives, so that any number of keys streams in bounded memory.
 */
export async function* exportKeys(needs: Pick<ImportNeeds, "db" | "sealer" | "clock">, narrowing: ExportNarrowing): AsyncGenerator<ExportedLine> {
  const now = needs.clock();
  const read = (after: number) => {
    const page = keyExportPage(needs.db, narrowing, after, PAGE_SIZE, now);
    page.catch(() => undefined); // awaited below; never an unhandled rejection if the reader stops first
    return page;
  };
  let next = read(0);
  for (;;) {
    const rows = await next;
    const more = rows.length === PAGE_SIZE;
    if (more) next = read(rows[rows.length - 1]!.id);
    for (const r of rows) {
      yield {
        customer: r.customer, domain: r.domain ?? undefined, application: r.application ?? undefined, subscriber: r.subscriber ?? undefined,
        user: r.user ?? undefined, name: r.name, keyId: needs.sealer.open(r.sealed, r.hash), type: r.type as KeyType, active: r.active,
        createdAt: r.createdAt, expiresAt: r.expiresAt, policy: r.policy,
      };
    }
    if (!more) return;
  }
}

/** Records an export in the admin's trail: how many keys it gave, never which. */
export async function recordExport(needs: Pick<ImportNeeds, "db" | "clock" | "metrics">, count: number, by: Author): Promise<void> {
  await eventRecordExport(needs.db, count, by, needs.clock());
  needs.metrics?.keyEvents("exported");
}
