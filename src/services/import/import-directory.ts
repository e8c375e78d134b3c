import { AppError, conflict, notFound, UniqueViolation } from "../../domain/errors.ts";
import { parseNamed } from "../../domain/scope/identifier.ts";
import type { ImportLine } from "../../domain/import/import-line.ts";
import type { Customer, Domain, User } from "../../domain/model.ts";
import { type Scope } from "../../domain/scope/scope.ts";
import {
  applicationInsert, customerInsert, domainInsert, entityFind, subscriberInsert, TABLES, userInsert,
} from "../../store/directory/directory.ts";
import type { ImportedEntity, ImportNeeds, ImportOptions } from "./needs.ts";

/** Scopes resolved per import are kept up to this many; then they are read again. */
const MAX_RESOLVED = 10_000;

/** A line's scope, and its user if it names one. */
export interface ResolvedScope {
  scope: Scope;
  userId: number | null;
}

/**
 * Resolves the entities that lines name, as the key paths do (id, uuid or name; a subscriber by msisdn
 * first), creating the missing ones when the import asks for it. What it resolved is kept for the
 * rest of the import: a file's keys share a few customers and domains.
 */
export class ImportDirectory {
  readonly #needs: ImportNeeds;
  readonly #options: ImportOptions;
  readonly #resolved = new Map<string, Promise<ResolvedScope>>();

  constructor(needs: ImportNeeds, options: ImportOptions) {
    this.#needs = needs;
    this.#options = options;
  }

  /** The line's scope; an AppError (404, 400) when an entity does not exist and may not be created. */
  resolve(line: ImportLine): Promise<ResolvedScope> {
    const key = JSON.stringify([line.customer, line.domain, line.application, line.subscriber, line.user]);
    let resolved = this.#resolved.get(key);
    if (!resolved) {
      if (this.#resolved.size >= MAX_RESOLVED) this.#resolved.clear();
      resolved = this.#resolve(line);
      this.#resolved.set(key, resolved);
      // A refusal stands for the rest of the import (each line of a domain another customer holds is not
      // tried again); a failure of the database does not.
      resolved.catch((error: unknown) => {
        if (!(error instanceof AppError)) this.#resolved.delete(key);
      });
    }
    return resolved;
  }

  async #resolve(line: ImportLine): Promise<ResolvedScope> {
    const db = this.#needs.db;
    const customer = await this.#entity("customer", line.customer, () => entityFind(db, TABLES.customers, parseNamed(line.customer), null),
      (now) => customerInsert(db, line.customer, now));
    const domain = line.domain === undefined ? undefined : await this.#domain(customer, line.domain);
    let scope: Scope = { tenantId: customer.id, domainId: domain?.id ?? null, applicationId: null, subscriberId: null };
    if (domain && line.application !== undefined) {
      const ref = line.application;
      const application = await this.#entity("application", ref, () => entityFind(db, TABLES.applications, parseNamed(ref), domain.id),
        (now) => applicationInsert(db, domain, { name: ref, url: null, method: "POST" }, now));
      scope = { ...scope, applicationId: application.id };
    }
    if (domain && line.subscriber !== undefined) {
      const ref = line.subscriber;
      const subscriber = await this.#entity("subscriber", ref,
        async () => (await entityFind(db, TABLES.subscribers, { kind: "name", name: ref }, domain.id)) ?? entityFind(db, TABLES.subscribers, parseNamed(ref), domain.id),
        (now) => subscriberInsert(db, domain, ref, now));
      scope = { ...scope, subscriberId: subscriber.id };
    }
    const user = line.user === undefined ? undefined : await this.#user(customer, domain, line.user);
    return { scope, userId: user?.id ?? null };
  }

  #domain(customer: Customer, ref: string): Promise<Domain> {
    const db = this.#needs.db;
    return this.#entity("domain", ref, () => entityFind(db, TABLES.domains, parseNamed(ref), customer.id), (now) => domainInsert(db, customer.id, ref, now));
  }

  /** A user's key is at the user's own scope: a user of another customer or domain is not this line's. */
  async #user(customer: Customer, domain: Domain | undefined, ref: string): Promise<User> {
    const db = this.#needs.db;
    const user = await this.#entity("user", ref, () => entityFind(db, TABLES.users, parseNamed(ref), customer.id),
      (now) => userInsert(db, customer.id, domain?.id ?? null, ref, now));
    if (user.domainId !== (domain?.id ?? null)) throw new AppError("bad_request", `The user ${ref} is not at this line's scope.`);
    return user;
  }

  /**
   * Finds an entity, or creates it when the import may; of two imports creating it at once, one does
   * and both use it. A name that another parent's entity holds (domains and users' emails are unique
   * across customers) is a conflict: the line is not written, and the import goes on.
   */
  async #entity<T>(kind: ImportedEntity, ref: string, find: () => Promise<T | undefined>, insert: (now: Date) => Promise<T>): Promise<T> {
    const found = await find();
    if (found) return found;
    if (!this.#options.createDirectory) throw notFound(`No such ${kind}: ${ref} (import with ?createDirectory=true to create it).`);
    const problem = this.#options.creatable(kind, ref);
    if (problem) throw new AppError("bad_request", `No such ${kind}, and none can be created: ${problem}.`);
    try {
      const made = await insert(this.#needs.clock());
      this.#needs.pathScopes.clear();
      return made;
    } catch (error) {
      if (!(error instanceof UniqueViolation)) throw error;
      const raced = await find();
      if (!raced) throw conflict(`A ${kind} ${ref} exists, but not where this line puts it.`);
      return raced;
    }
  }
}
