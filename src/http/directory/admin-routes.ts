// directory/ of http/: the admin API's directory of entities, their keys and policies. It may use domain/,
// http/'s top files, runtime/, services/ (directory, keys, policy), http/keys/ and http/policy/.

import type { Request } from "express";
import type { z } from "zod";
import type { Customer, Domain } from "../../domain/model.ts";
import { customerScope } from "../../domain/scope/scope.ts";
import type { DirectoryNeeds } from "../../services/directory/needs.ts";
import type { KeysNeeds } from "../../services/keys/needs.ts";
import type { PolicyNeeds } from "../../services/policy/needs.ts";
import * as directory from "../../services/directory/directory.ts";
import { listEvents } from "../../services/keys/key-events.ts";
import { provisionKey } from "../../services/keys/keys.ts";
import { invoke, runtimeKey, type RuntimeOptions } from "../../runtime/runtime.ts";
import { adminPolicyRoutes } from "../policy/admin-policy-routes.ts";
import { adminAuthor } from "../author.ts";
import { sendEventPage } from "../keys/key-lifecycle-routes.ts";
import { keyJson } from "../keys/present.ts";
import { route, type Route } from "../route.ts";
import {
  applicationBody, applicationObject, customerBody, customerObject, domainBody, domainObject, eventObject, eventsQuery, invokeBody, keyObject, provisionBody,
  subscriberBody, subscriberObject, userBody, userObject, userWithKeyObject,
} from "../schemas.ts";

// The admin API (docs/api.md, "Directory"): the platform's own operator keeps the directory. Unknown parents and
// entities are 404 here; the admin token has already been checked.
const C = "/admin/customers";
const CD = `${C}/:customer/domains`;
const CDA = `${CD}/:domain/applications`;
const CDS = `${CD}/:domain/subscribers`;
const CU = `${C}/:customer/users`;
const tag = "admin";

const param = (req: Request, name: string) => String(req.params[name]);

export function adminRoutes(ctx: DirectoryNeeds & KeysNeeds & PolicyNeeds, runtime: RuntimeOptions): Route[] {
  const customer = (req: Request) => directory.getCustomer(ctx, param(req, "customer"));
  const domain = async (req: Request): Promise<Domain> => directory.getDomain(ctx, await customer(req), param(req, "domain"));
  const application = async (req: Request) => directory.getApplication(ctx, await domain(req), param(req, "application"));
  const subscriber = async (req: Request) => directory.getSubscriber(ctx, await domain(req), param(req, "subscriber"));

  /** GET and DELETE of one entity, found by `load`. */
  const entity = <T extends { id: number }>(
    path: string, what: string, noun: string, table: directory.EntityTableName, schema: Route["ok"]["schema"], load: (req: Request) => Promise<T>,
  ): Route[] => [
    route({
      method: "get", path, operationId: `get${noun}`, tag, auth: "admin", summary: `Get a ${what}`, refusals: ["not_found"],
      ok: { status: 200, description: `The ${what}`, schema },
      handle: async (req, res) => void res.json((await directory.shown(ctx, table, [await load(req)]))[0]),
    }),
    route({
      method: "delete", path, operationId: `delete${noun}`, tag, auth: "admin", refusals: ["not_found"],
      summary: `Delete a ${what} with everything below it, keys included`,
      ok: { status: 204, description: "Deleted" },
      handle: async (req, res) => {
        await directory.deleteEntity(ctx, table, (await load(req)).id, adminAuthor(req));
        res.status(204).end();
      },
    }),
  ];

  /** POST and GET of the entities below `parent` (none: the customers), as the directory makes and shows them. */
  const collection = <B, T>(
    path: string, what: string, noun: string, parent: string | null, table: directory.EntityTableName, body: z.ZodType<B>, schema: z.ZodType,
    create: (req: Request, body: B) => Promise<T>, list: (req: Request) => Promise<T[]>,
  ): Route[] => [
    route({
      method: "post", path, operationId: `create${noun}`, tag, auth: "admin", body, refusals: parent ? ["not_found", "conflict"] : ["conflict"], summary: `Create a ${what}`,
      ok: { status: 201, description: `The ${noun.toLowerCase()}`, schema },
      handle: async (req, res, input) => void res.status(201).json(await create(req, input.body)),
    }),
    route({
      method: "get", path, operationId: `list${noun}s`, tag, auth: "admin", ...(parent && { refusals: ["not_found"] }), summary: parent ? `List a ${parent}'s ${what}s` : `List ${what}s`,
      ok: { status: 200, description: `${noun}s`, schema: schema.array() },
      handle: async (req, res) => void res.json(await directory.shown(ctx, table, await list(req))),
    }),
  ];

  return [
    ...collection(C, "customer", "Customer", null, "customers", customerBody, customerObject,
      (_req, body) => directory.createCustomer(ctx, body.name), () => directory.listCustomers(ctx)),
    ...entity(`${C}/:customer`, "customer", "Customer", "customers", customerObject, customer),

    ...collection(CD, "domain", "Domain", "customer", "domains", domainBody, domainObject,
      async (req, body) => directory.createDomain(ctx, await customer(req), body.domain), async (req) => directory.listDomains(ctx, await customer(req))),
    ...entity(`${CD}/:domain`, "domain", "Domain", "domains", domainObject, domain),

    ...collection(CDA, "voice application", "Application", "domain", "applications", applicationBody, applicationObject,
      async (req, body) => directory.createApplication(ctx, await domain(req), { name: body.name, url: body.url ?? null, method: body.method ?? "POST" }),
      async (req) => directory.listApplications(ctx, await domain(req))),
    ...entity(`${CDA}/:application`, "voice application", "Application", "applications", applicationObject, application),
    route({
      method: "post", path: `${CDA}/:application/runtime-key`, operationId: "provisionRuntimeKey", tag, auth: "admin", refusals: ["not_found"], summary: "Provision the application's runtime key",
      ok: { status: 200, description: "The runtime key", schema: keyObject },
      handle: async (req, res) => void res.json(keyJson(await runtimeKey(ctx, await application(req)))),
    }),
    route({
      method: "post", path: `${CDA}/:application/invoke`, operationId: "invokeApplication", tag, auth: "admin", refusals: ["not_found", "bad_gateway"],
      summary: "Run the application: its url gets the body and the runtime key in the runtime header",
      body: invokeBody,
      ok: { status: 200, description: "The application's own answer, status and body as it gave them" },
      handle: async (req, res, { body }) => {
        const answer = await invoke(ctx, await application(req), body, runtime);
        res.status(answer.status);
        if (answer.contentType) res.setHeader("Content-Type", answer.contentType);
        res.end(answer.body);
      },
    }),

    ...collection(CDS, "subscriber", "Subscriber", "domain", "subscribers", subscriberBody, subscriberObject,
      async (req, body) => directory.createSubscriber(ctx, await domain(req), body.msisdn), async (req) => directory.listSubscribers(ctx, await domain(req))),
    ...entity(`${CDS}/:subscriber`, "subscriber", "Subscriber", "subscribers", subscriberObject, subscriber),
    ...adminPolicyRoutes(ctx, [
      { path: `${C}/:customer`, level: "customer", noun: "Customer", load: customer },
      { path: `${CD}/:domain`, level: "domain", noun: "Domain", load: domain },
      { path: `${CDA}/:application`, level: "application", noun: "Application", load: application },
      { path: `${CDS}/:subscriber`, level: "subscriber", noun: "Subscriber", load: subscriber },
    ]),

    route({
      method: "post", path: CU, operationId: "createUser", tag, auth: "admin", body: userBody, refusals: ["not_found", "conflict"], summary: "Create a user, with the user's key",
      ok: { status: 201, description: "The user, its key under `key`", schema: userWithKeyObject },
      handle: async (req, res, { body }) => {
        const owner: Customer = await customer(req);
        const at = body.domain === undefined ? null : await directory.getDomain(ctx, owner, body.domain);
        const { user, key } = await directory.createUser(ctx, owner, body.email, at, adminAuthor(req));
        res.status(201).json({ ...user, key: keyJson(key) });
      },
    }),
    route({
      method: "get", path: CU, operationId: "listUsers", tag, auth: "admin", refusals: ["not_found"], summary: "List a customer's users",
      ok: { status: 200, description: "Users", schema: userObject.array() },
      handle: async (req, res) => void res.json(await directory.listUsers(ctx, await customer(req))),
    }),
    ...entity(`${CU}/:user`, "user", "User", "users", userObject, async (req) => directory.getUser(ctx, await customer(req), param(req, "user"))),

    route({
      method: "post", path: `${C}/:customer/keys`, operationId: "provisionBootstrapKey", tag, auth: "admin", body: provisionBody, refusals: ["not_found"],
      summary: "Provision a customer key (the bootstrap path)",
      ok: { status: 200, description: "The key", schema: keyObject },
      handle: async (req, res, { body }) => {
        const { id } = await customer(req);
        const { key } = await provisionKey(ctx, customerScope(id), body, adminAuthor(req));
        res.json(keyJson(key));
      },
    }),
    route({
      method: "get", path: "/admin/events", operationId: "listAllEvents", tag, auth: "admin", query: eventsQuery,
      summary: "The events of every key, newest first",
      ok: { status: 200, description: "A page of events", schema: eventObject.array(), headers: ["Link"] },
      handle: (req, res, { query }) => sendEventPage(req, res, query, (page) => listEvents(ctx, null, page)),
    }),
  ];
}
