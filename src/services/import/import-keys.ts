import { setImmediate as turn } from "node:timers/promises";
import { AppError, statusOf, UniqueViolation, type ErrorCode } from "../../domain/errors.ts";
import { importedType, importLineProblem, importVerdict, type ImportedKey, type ImportLine, type ImportVerdict } from "../../domain/import/import-line.ts";
import { changesBetween, type Author, type Changes } from "../../domain/keys/key-event.ts";
import { keyHolder } from "../../domain/keys/lineage.ts";
import type { Policy } from "../../domain/policy/policy.ts";
import { tokenHashHex } from "../../domain/keys/token.ts";
import type { Queryable } from "../../store/database.ts";
import { keyFindByTokens, keyIdentitiesTaken, keyStatisticsRefresh, type KeyByToken } from "../../store/import/import-keys.ts";
import { keyInsertIds, keyInsertRows, keyLockById, keyUpdate, type KeyRows, type NewKey } from "../../store/keys/keys.ts";
import { orderedPolicy, policyParam } from "../../store/policy/policies.ts";
import { policyChanges, resetBalance } from "../policy/policy-changes.ts";
import { ImportDirectory } from "./import-directory.ts";
import type { ImportNeeds, ImportOptions } from "./needs.ts";

/** The error body a refused line carries, as every error answer's (docs/api.md, "Errors"). */
export interface LineError {
  status: number;
  error: string;
  message: string;
}

/** What one line came to: `id` with every status but invalid and conflict, `error` with those two. */
export type LineOutcome =
  | { status: "created" | "updated" | "unchanged"; id: number }
  | { status: "conflict" | "invalid"; error: LineError };

export const lineError = (code: ErrorCode, message: string): LineError => ({ status: statusOf(code), error: code, message });

/**
 * Lines worked on between two turns of the event loop: judging a line and sealing its token cost
 * some 10-20 µs each, and the requests /auth answers meanwhile must not wait for a whole group.
 */
const LINES_PER_TURN = 50;
/**
 * Lines a group holds at most: a batch (at most some 1,000 lines: http/import/import-stream.ts) is
 * mostly one. A group's new keys go in one statement, its own transaction: each statement costs the
 * import a round trip and the process's turn to send the next, some 8 ms a group as measured, where
 * PostgreSQL takes 15 ms to insert 500 keys. The statement's parameters are made in one go (some 3 ms
 * for 1,000 keys' 19 arrays: #rows) while the group before is written, on the import's worker thread
 * (src/import-worker.ts); on PGlite, which shares the thread that answers /auth, the insert itself
 * holds it up longer.
 */
const GROUP_LINES = 1000;

/**
 * Keys an import creates before it first refreshes the planner's statistics (store/import/import-keys.ts).
 * Each refresh after waits until the import has doubled the keys it had created by the one before:
 * the statistics are never more than half a table behind, and a million keys take eight refreshes
 * (each reads a sample of some 30,000 rows), not a hundred.
 */
const KEYS_BEFORE_ANALYZE = 10_000;

/** A line resolved and judged ready to be compared with the store. */
interface Pending {
  index: number;
  line: ImportLine;
  key: ImportedKey & { policyValue: Policy | null };
  hash: string;
  identity: string;
}

/**
 * Imports a file's lines, batch by batch, each line as if imported alone after the ones before it
 * (docs/migration.md): a group of lines is read with one statement and written in one transaction, in
 * which each key's rows are written whole or not at all. A line that names the token or the name of a
 * line of a group not yet written starts a new group, read once that one is written, so that it is
 * judged against what that line wrote.
 */
export class KeyImport {
  readonly #needs: ImportNeeds;
  readonly #directory: ImportDirectory;
  readonly #by: Author;
  /** Keys this import created, and had created by its last refresh of the statistics. */
  #created = 0;
  #createdByAnalyze = 0;
  /** The grouping of the batch given before: one batch's lines are grouped after the other's. */
  #grouped: Promise<unknown> = Promise.resolve();
  /** The write of the last group: each group's transaction begins once the one before it has committed. */
  #written: Promise<void> = Promise.resolve();
  /** The tokens and names of the lines of the groups not yet written, each with its group. */
  readonly #unwritten = new Map<string, Pending[]>();

  constructor(needs: ImportNeeds, options: ImportOptions) {
    this.#needs = needs;
    this.#by = options.by;
    this.#directory = new ImportDirectory(needs, options);
  }

  /**
   * The outcome of each line, in order. Groups of at most GROUP_LINES lines go one after the other,
   * each read and sealed while the group before it is written, its own transaction begun once that
   * one has committed: the process and the database work at once, not in turn. A batch may be given
   * before the one before it is written: its first group is then read and sealed meanwhile.
   */
  async importBatch(lines: readonly ImportLine[]): Promise<LineOutcome[]> {
    const outcomes: LineOutcome[] = new Array<LineOutcome>(lines.length);
    const grouped = this.#grouped.then(() => this.#group(lines, outcomes));
    this.#grouped = grouped.catch(() => undefined);
    await (await grouped).written;
    return outcomes;
  }

  /** Puts a batch's lines into groups and has each written: once its last group's write has settled, every line has its outcome. */
  async #group(lines: readonly ImportLine[], outcomes: LineOutcome[]): Promise<{ written: Promise<void> }> {
    const now = this.#needs.clock();
    let group: Pending[] = [];
    /** Whether the group being filled names the token or the name of a line not yet written: it is read once that line is. */
    let readAfter = false;
    const write = () => {
      this.#written = this.#write(group, outcomes, now, this.#written, readAfter);
      // Awaited by the next group, or at the end; a rejection meanwhile is not unhandled.
      this.#written.catch(() => undefined);
      group = [];
    };
    for (const [index, line] of lines.entries()) {
      if (index % LINES_PER_TURN === LINES_PER_TURN - 1) await turn();
      const pending = await this.#prepare(index, line, now).catch((error: unknown) => {
        if (!(error instanceof AppError)) throw error;
        // An entity the line names that is another's (409) is a conflict, as a taken name is; else the line is invalid.
        outcomes[index] = { status: error.code === "conflict" ? "conflict" : "invalid", error: lineError(error.code, error.message) };
        return undefined;
      });
      if (!pending) continue;
      const named = this.#unwritten.has(pending.hash) || this.#unwritten.has(pending.identity);
      if (named || group.length === GROUP_LINES) {
        write();
        readAfter = named;
      }
      group.push(pending);
      this.#unwritten.set(pending.hash, group).set(pending.identity, group);
    }
    write();
    // Not the promise itself, which the caller would wait for: the next batch is grouped meanwhile.
    return { written: this.#written };
  }

  async #prepare(index: number, line: ImportLine, now: Date): Promise<Pending | undefined> {
    const problem = importLineProblem(line, now);
    if (problem) throw new AppError("bad_request", `Invalid line: ${problem}.`);
    const { scope, userId } = await this.#directory.resolve(line);
    const policyValue = line.policy ? orderedPolicy(line.policy) : null;
    const key = { scope, userId, name: line.name, active: line.active, expiresAt: line.expiresAt ?? null, policy: policyParam(policyValue), policyValue };
    const identity = userId !== null ? `user:${userId}` : JSON.stringify([scope.tenantId, scope.domainId, scope.applicationId, scope.subscriberId, line.name]);
    return { index, line, key, hash: tokenHashHex(line.keyId), identity };
  }

  /**
   * Judges a group of lines (no two of one token or name) against the store, and writes what they
   * change in one transaction. A new token's line is inserted unless its name is taken, which the
   * insert itself finds: the group is written first as if no name were taken, and when one is (a
   * unique index refuses the transaction), again with ON CONFLICT DO NOTHING on the names' unique
   * indexes. Only the lines that skipped, rare, are read again, to say why.
   */
  async #write(group: Pending[], outcomes: LineOutcome[], now: Date, before: Promise<void>, readAfter: boolean): Promise<void> {
    // `before` is the group before this one: read after it has committed (`readAfter`), or only written after.
    if (readAfter) await before;
    if (group.length === 0) return before;
    const { db } = this.#needs;
    const byToken = await keyFindByTokens(db, group.map((p) => p.hash), now);
    const verdicts = group.map((p) => [p, this.#verdict(p, byToken, false)] as const);
    const created = verdicts.filter(([, v]) => v.status === "created").map(([p]) => p);
    const updated = verdicts.flatMap(([p, v]) => (v.status === "updated" ? [[p, v.id] as const] : []));
    const rows = await this.#rows(created, now);
    await before;
    const insert = (q: Queryable, unlessExists: boolean) => (rows.hashes.length > 0 ? keyInsertIds(q, rows, unlessExists) : Promise.resolve([]));
    // A group of new keys alone, the usual case, is one statement and its own transaction: one round trip.
    const writeGroup = (unlessExists: boolean) => updated.length === 0 ? insert(db, unlessExists) : db.transaction(async (tx) => {
      const ids = await insert(tx, unlessExists);
      for (const [p, id] of updated) await this.#update(tx, p, id, now);
      return ids;
    });
    // Most groups take no name or token a key holds: written as they are, and again, skipping the lines that do, when one does.
    const ids = await writeGroup(false).catch((error: unknown) => {
      if (error instanceof UniqueViolation) return writeGroup(true);
      throw error;
    });
    const inserted = new Map(ids.map((id, i) => [created[i]!, id]));
    // Written: a later line that names one of these may be read at once.
    for (const p of group) {
      for (const name of [p.hash, p.identity]) if (this.#unwritten.get(name) === group) this.#unwritten.delete(name);
    }
    const skipped = await this.#whySkipped(created.filter((p) => inserted.get(p) === undefined), now);
    const createdCount = created.length - skipped.size;
    // This process forgets the tokens it refused at once; the others hear the announcement.
    if (createdCount > 0) this.#needs.keyCache.forgetUnknown();
    this.#needs.metrics?.keyEvents("created", createdCount);
    this.#created += createdCount;
    if (this.#created - this.#createdByAnalyze >= Math.max(KEYS_BEFORE_ANALYZE, this.#createdByAnalyze)) await this.#analyze(false);
    this.#needs.metrics?.keyEvents("updated", updated.length);
    for (const [p, verdict] of verdicts) {
      if (verdict.status === "created") {
        const why = skipped.get(p);
        outcomes[p.index] = why === undefined ? { status: "created", id: inserted.get(p)! } : { status: "conflict", error: lineError("conflict", why) };
      } else if (verdict.status === "conflict") {
        outcomes[p.index] = { status: "conflict", error: lineError("conflict", verdict.message) };
      } else {
        outcomes[p.index] = { status: verdict.status, id: verdict.id };
        // This process's cache forgets the key at once; the others hear the update's announcement.
        if (verdict.status === "updated") this.#needs.keyCache.invalidate(p.hash);
      }
    }
  }

  #verdict(p: Pending, byToken: Map<string, KeyByToken>, nameTaken: boolean): ImportVerdict {
    const held = byToken.get(p.hash);
    return importVerdict(p.key, held && { ...held, policy: policyParam(held.policy) }, nameTaken);
  }

  /** Why each line the insert skipped was: its name taken, or (another writer meanwhile) its token. */
  async #whySkipped(skipped: Pending[], now: Date): Promise<Map<Pending, string>> {
    if (skipped.length === 0) return new Map();
    const { db } = this.#needs;
    const byToken = await keyFindByTokens(db, skipped.map((p) => p.hash), now);
    const taken = await keyIdentitiesTaken(db, skipped.map((p) => p.key), now);
    return new Map(skipped.map((p, i) => {
      const verdict = this.#verdict(p, byToken, taken[i]!);
      return [p, verdict.status === "conflict" ? verdict.message : "The token or the name was taken meanwhile."];
    }));
  }

  /** Once the file is done: the planner learns how large the tables have grown, when many keys came. */
  async finish(): Promise<void> {
    if (this.#created >= KEYS_BEFORE_ANALYZE) await this.#analyze(true);
  }

  async #analyze(done: boolean): Promise<void> {
    this.#createdByAnalyze = this.#created;
    await keyStatisticsRefresh(this.#needs.db, done);
  }

  /** The insert's parameters for these lines' keys, their tokens sealed (some 10 µs a key, LINES_PER_TURN between two turns). */
  async #rows(lines: readonly Pending[], now: Date): Promise<KeyRows> {
    const newKeys: NewKey[] = [];
    for (const p of lines) {
      if (newKeys.push(this.#newKey(p, now)) % LINES_PER_TURN === 0) await turn();
    }
    return keyInsertRows(newKeys);
  }

  #newKey(p: Pending, now: Date): NewKey {
    const { line, key } = p;
    const createdAt = line.createdAt ?? now;
    return {
      hash: Buffer.from(p.hash, "hex"), sealed: this.#needs.sealer.seal(line.keyId, Buffer.from(p.hash, "hex")), name: key.name, active: key.active,
      type: importedType(line), scope: key.scope, userId: key.userId, managedBy: null, expiresAt: key.expiresAt, policy: key.policyValue,
      author: this.#by, now: createdAt,
      changes: { ...changesBetween(undefined, { name: key.name, active: key.active, expiresAt: key.expiresAt, replacedBy: null }), ...policyChanges(null, key.policyValue) },
    };
  }

  /** The line's active, expiry and policy onto its key, with an `updated` event; a policy set anew starts its balance again, as a PUT does. */
  async #update(tx: Queryable, p: Pending, id: number, now: Date): Promise<void> {
    const before = await keyLockById(tx, id, now);
    if (!before) return;
    const { key } = p;
    const after = { name: before.name, active: key.active, activeAt: key.active && !before.active ? now : before.activeAt, expiresAt: key.expiresAt, policy: key.policyValue };
    const changes: Changes = { ...changesBetween(before, { ...after, replacedBy: before.replacedBy }), ...policyChanges(before.policy, key.policyValue) };
    if (changes.policy) Object.assign(changes, await resetBalance(tx, keyHolder(before), before.policy, key.policyValue, now));
    await keyUpdate(tx, id, after, this.#by, changes, now);
  }
}
