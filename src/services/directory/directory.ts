import { conflict, notFound, UniqueViolation } from "../../domain/errors.ts";
import { parseNamed } from "../../domain/scope/identifier.ts";
import type { Application, Customer, Domain, Subscriber, User } from "../../domain/model.ts";
import {
  applicationInsert, customerInsert, domainInsert, entityDelete, entityFind, entityList, keyColumnOf, subscriberInsert,
  TABLES, userInsert, type ApplicationInput,
} from "../../store/directory/directory.ts";
import { keyInsertUnlessExists, keyRecordExpiries } from "../../store/keys/keys.ts";
import { changesBetween, type Author } from "../../domain/keys/key-event.ts";
import { domainScope, customerScope } from "../../domain/scope/scope.ts";
import type { DirectoryNeeds } from "./needs.ts";
import { entitiesShown } from "../policy/credits.ts";
import { mintToken, withToken } from "../keys/keys.ts";
import type { Key } from "../../domain/model.ts";

// Use cases of the admin API's directory. Entities are named by id, uuid or name within their parent
// (docs/api.md, "Directory"); an unknown one is 404, a duplicate 409.

async function unique<T>(what: string, insert: () => Promise<T>): Promise<T> {
  try {
    return await insert();
  } catch (error) {
    if (error instanceof UniqueViolation) throw conflict(`${what} already exists.`);
    throw error;
  }
}

/**
 * A new customer, domain, application or subscriber: paths that name it resolve at once on this
 * process, even where it was looked for and not found before; other processes hear the directory's
 * announcement (services/verification/cache-invalidation.ts).
 */
async function created<T>(ctx: DirectoryNeeds, entity: Promise<T>): Promise<T> {
  const made = await entity;
  ctx.pathScopes.clear();
  return made;
}

function found<T>(entity: T | undefined, what: string): T {
  if (entity === undefined) throw notFound(`No such ${what}.`);
  return entity;
}

export const createCustomer = (ctx: DirectoryNeeds, name: string): Promise<Customer> =>
  created(ctx, unique(`A customer named "${name}"`, () => customerInsert(ctx.db, name, ctx.clock())));

export const listCustomers = (ctx: DirectoryNeeds) => entityList(ctx.db, TABLES.customers, null);

export async function getCustomer(ctx: DirectoryNeeds, ref: string): Promise<Customer> {
  return found(await entityFind(ctx.db, TABLES.customers, parseNamed(ref), null), "customer");
}

export async function getDomain(ctx: DirectoryNeeds, customer: Customer, ref: string): Promise<Domain> {
  return found(await entityFind(ctx.db, TABLES.domains, parseNamed(ref), customer.id), "domain");
}

export async function getApplication(ctx: DirectoryNeeds, domain: Domain, ref: string): Promise<Application> {
  return found(await entityFind(ctx.db, TABLES.applications, parseNamed(ref), domain.id), "application");
}

/** A subscriber by msisdn first, then id, then uuid. */
export async function findSubscriber(ctx: Pick<DirectoryNeeds, "db">, domainId: number | null, ref: string): Promise<Subscriber | undefined> {
  const ident = parseNamed(ref);
  if (ident.kind === "id") {
    const byMsisdn = await entityFind(ctx.db, TABLES.subscribers, { kind: "name", name: ref }, domainId);
    if (byMsisdn) return byMsisdn;
  }
  return entityFind(ctx.db, TABLES.subscribers, ident, domainId);
}

export async function getSubscriber(ctx: DirectoryNeeds, domain: Domain, ref: string): Promise<Subscriber> {
  return found(await findSubscriber(ctx, domain.id, ref), "subscriber");
}

export async function getUser(ctx: DirectoryNeeds, customer: Customer, ref: string): Promise<User> {
  return found(await entityFind(ctx.db, TABLES.users, parseNamed(ref), customer.id), "user");
}

export const createDomain = (ctx: DirectoryNeeds, customer: Customer, domain: string) =>
  created(ctx, unique(`The domain "${domain}"`, () => domainInsert(ctx.db, customer.id, domain, ctx.clock())));

export const listDomains = (ctx: DirectoryNeeds, customer: Customer) => entityList(ctx.db, TABLES.domains, customer.id);

export const createApplication = (ctx: DirectoryNeeds, domain: Domain, input: ApplicationInput) =>
  created(ctx, unique(`An application named "${input.name}" in this domain`, () => applicationInsert(ctx.db, domain, input, ctx.clock())));

export const listApplications = (ctx: DirectoryNeeds, domain: Domain) => entityList(ctx.db, TABLES.applications, domain.id);

export const createSubscriber = (ctx: DirectoryNeeds, domain: Domain, msisdn: string) =>
  created(ctx, unique(`A subscriber ${msisdn} in this domain`, () => subscriberInsert(ctx.db, domain, msisdn, ctx.clock())));

export const listSubscribers = (ctx: DirectoryNeeds, domain: Domain) => entityList(ctx.db, TABLES.subscribers, domain.id);

export const listUsers = (ctx: DirectoryNeeds, customer: Customer) => entityList(ctx.db, TABLES.users, customer.id);

/** Creates a user and, with it, the user's key: type user, named by the email, at the user's scope. */
export async function createUser(ctx: DirectoryNeeds, customer: Customer, email: string, domain: Domain | null, by: Author): Promise<{ user: User; key: Key }> {
  const now = ctx.clock();
  return unique(`A user ${email}`, () =>
    ctx.db.transaction(async (tx) => {
      const user = await userInsert(tx, customer.id, domain?.id ?? null, email, now);
      const scope = domain ? domainScope(customer.id, domain.id) : customerScope(customer.id);
      const { token, ...minted } = mintToken(ctx);
      const [stored] = await keyInsertUnlessExists(tx, [{
        ...minted, name: email, active: true, type: "user", scope, userId: user.id, managedBy: null, expiresAt: null, author: by,
        changes: changesBetween(undefined, { name: email, active: true, expiresAt: null, replacedBy: null }), now,
      }]);
      if (!stored) throw new Error("the user's key was not created");
      return { user, key: withToken(stored, token) };
    }),
  );
}

export type EntityTableName = keyof typeof TABLES;

const LEVEL_OF = { customers: "customer", domains: "domain", applications: "application", subscribers: "subscriber" } as const;

/** Entities as the API shows them: their policies' credits at the live balance (users have no policy). */
export async function shown<T>(ctx: DirectoryNeeds, table: EntityTableName, entities: T[]): Promise<T[]> {
  if (table === "users") return entities;
  return entitiesShown(ctx.db, LEVEL_OF[table], entities as (Customer | Domain | Application | Subscriber)[], ctx.clock()) as Promise<T[]>;
}

/**
 * Deletes an entity with everything below it; its keys stop working at once, on every process. Each
 * key it takes that was live gets its `deleted` event; one whose expiry had passed unrecorded gets
 * its `expired` event first, in the same transaction.
 */
export async function deleteEntity(ctx: DirectoryNeeds, table: EntityTableName, id: number, by: Author): Promise<void> {
  const t = TABLES[table] as Parameters<typeof entityDelete>[1];
  const now = ctx.clock();
  await ctx.db.transaction(async (tx) => {
    await keyRecordExpiries(tx, { sql: `k.${keyColumnOf(t)} = $3`, params: [id] }, now);
    await entityDelete(tx, t, id, by, now);
  });
  // Many keys may have gone: drop every cached verification here; other processes hear the
  // per-key notifications. Paths that name the entity refuse at once here; other processes hear the
  // directory's notification (services/verification/cache-invalidation.ts).
  ctx.keyCache.clear();
  ctx.pathScopes.clear();
}
