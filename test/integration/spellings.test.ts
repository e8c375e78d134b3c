import supertest from "supertest";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// Every spelling of a path (docs/api.md, "Verification"): the scope keywords in any letter case read
// as lower case and `tenants` as `customers`; `;` parameters kept in their segment or removed from
// every segment. The level rules and a restriction pass a path only under every reading; a limit
// counts a request when its pattern matches under any reading, whatever the letters' case. On POST
// /verify and on /auth (nginx's headers), and on keyplane's own key paths, which take no other spelling.

interface Verdict {
  code: string;
  reason?: string;
  ratelimits?: { name: string; remaining: number }[];
}

describe.each(backends())("spellings of a path on %s", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let globex: Tenant;
  const D1 = "sip.acme.example";
  const D2 = "media.acme.example";

  beforeAll(async () => {
    svc = await startService(backend);
    acme = await createTenant(svc, "acme");
    globex = await createTenant(svc, "globex");
  });
  afterAll(() => svc?.stop());

  const verify = async (key: string, path: string, method = "GET"): Promise<Verdict> => {
    const res = await supertest(svc.app).post("/verify").send({ key, path, method });
    expect(res.status, res.text).toBe(200);
    return res.body as Verdict;
  };
  const auth = (key: string, path: string, method = "GET") =>
    supertest(svc.app).get("/auth").set("Authorization", `Bearer ${key}`).set("X-Original-Method", method).set("X-Original-URI", path);
  /** /auth's answer as a verdict code. */
  const authCode = async (key: string, path: string, method = "GET") => {
    const res = await auth(key, path, method);
    if (res.status === 200) return "VALID";
    if (res.status === 401 && String(res.headers["www-authenticate"]).includes("insufficient_scope")) return "FORBIDDEN";
    if (res.status === 403) return "RESTRICTED";
    return `HTTP ${res.status}`;
  };
  /** A key made by acme's customer key, with its own policy. */
  const keyWith = async (name: string, policy: object): Promise<string> => {
    const res = await svc.as(acme.keys.customer).post("/customers/acme/keys", { name, policy });
    expect(res.status, res.text).toBe(200);
    return (res.body as { keyId: string }).keyId;
  };

  describe("the level rules", () => {
    it.each([
      ["a capital keyword", `/Domains/${D2}/trunks`],
      ["a keyword in capitals", `/DOMAINS/${D2}/trunks`],
      ["a parameter on the keyword", `/domains;v=1/${D2}/trunks`],
      ["a parameter on the identifier", `/domains/${D2};x/trunks`],
      ["capitals and a parameter", `/Domains;v=1/${D2}/trunks`],
      ["a dot-dot parameter", `/domains/${D1}/..;/${D2}/trunks`],
      ["an encoded dot-dot parameter", `/domains/${D1}/..%3B/${D2}/trunks`],
      ["a capital keyword behind an encoded slash", `/domains/${D1}/..%2F..%2FDomains%2F${D2}/trunks`],
      ["a capital keyword after a dot segment", `/domains/${D1}/../../Domains/${D2}/trunks`],
      ["a parameter on a keyword behind an encoded slash", `/domains/${D1}/..%2F..%2Fdomains;x%2F${D2}/trunks`],
    ])("refuse another domain's path to a domain's key: %s (%s)", async (_name, path) => {
      expect((await verify(acme.keys.domain, path, "DELETE")).code).toBe("FORBIDDEN");
      expect(await authCode(acme.keys.domain, path, "DELETE")).toBe("FORBIDDEN");
      // Unless a segment that keeps a `;` stands for an entity (then no reading names the domain), the
      // key's own domain spelled the same way is not refused for the spelling's sake, and the domain's
      // customer reaches both.
      if (path.includes(";x")) return;
      expect((await verify(acme.keys.domain, path.replaceAll(D2, D1), "DELETE")).code).toBe("VALID");
      expect((await verify(acme.keys.customer, path, "DELETE")).code).toBe("VALID");
    });

    it.each([
      ["Tenants", "/Tenants/acme/invoices"],
      ["TENANTS", "/TENANTS/acme/invoices"],
      ["Customers", "/Customers/acme/invoices"],
      ["a parameter on the keyword", "/tenants;x/acme/invoices"],
    ])("refuse a customer's path to its domain's key, and to another customer: %s", async (_name, path) => {
      expect((await verify(acme.keys.domain, path)).code).toBe("FORBIDDEN");
      expect((await verify(globex.keys.customer, path)).code).toBe("FORBIDDEN");
      expect(await authCode(globex.keys.customer, path)).toBe("FORBIDDEN");
      expect((await verify(acme.keys.customer, path)).code).toBe("VALID");
    });

    it("names no entity by a segment that keeps a parameter, its own included", async () => {
      for (const path of [`/domains/${D1};v=1/trunks`, "/domains/self;v=1/trunks", "/applications/ivr;v=1"]) {
        expect(`${path}: ${(await verify(acme.keys.domain, path)).code}`).toBe(`${path}: FORBIDDEN`);
      }
      expect((await verify(acme.keys.domain, `/domains;v=1/${D1}/trunks;jsessionid=1`)).code).toBe("VALID");
    });

    it("keeps no verdict for one spelling that another spelling could take", async () => {
      const key = acme.keys.domain;
      for (let round = 0; round < 2; round++) {
        expect((await verify(key, `/domains/${D1}/trunks`, "DELETE")).code).toBe("VALID");
        expect((await verify(key, `/Domains/${D2}/trunks`, "DELETE")).code).toBe("FORBIDDEN");
        expect((await verify(key, `/domains;x/${D2}/trunks`, "DELETE")).code).toBe("FORBIDDEN");
        expect((await verify(key, `/domains/${D2}/trunks`, "DELETE")).code).toBe("FORBIDDEN");
        expect((await verify(key, `/DOMAINS/${D1}/trunks`, "DELETE")).code).toBe("VALID");
      }
    });
  });

  describe("a restriction to /customers/acme/calls/**", () => {
    let key: string;
    beforeAll(async () => {
      key = await keyWith("calls only", { restrictions: { paths: ["/customers/acme/calls/**"] } });
    });

    it.each([
      ["the plain path", "/customers/acme/calls/1", "VALID"],
      ["tenants", "/tenants/acme/calls/1", "VALID"],
      ["a capital keyword", "/Customers/acme/calls/1", "VALID"],
      ["Tenants in capitals", "/TENANTS/acme/calls/1", "VALID"],
      ["a parameter below the pattern's **", "/customers/acme/calls/1;v=2", "VALID"],
      // Only the keywords are read in any case: another resource is another resource.
      ["a capital resource", "/customers/acme/Calls/1", "RESTRICTED"],
      ["a parameter on the keyword", "/customers;a=b/acme/calls/1", "RESTRICTED"],
      ["a parameter on the resource", "/customers/acme/calls;a=b/1", "RESTRICTED"],
      ["a dot-dot parameter climbing out", "/customers/acme/calls/..;/invoices", "RESTRICTED"],
      ["an encoded dot-dot parameter climbing out", "/customers/acme/calls/..%3B/invoices", "RESTRICTED"],
      ["another resource", "/customers/acme/invoices", "RESTRICTED"],
    ])("%s: %s is %s", async (_name, path, expected) => {
      const verdict = await verify(key, path);
      expect(verdict.code).toBe(expected);
      if (expected === "RESTRICTED") expect(verdict.reason).toBe("path");
      expect(await authCode(key, path)).toBe(expected);
    });

    it("is judged with a pattern written in another case as its canonical form", async () => {
      const other = await keyWith("calls only, spelled", { restrictions: { paths: ["/Tenants/acme/calls/**"] } });
      expect((await verify(other, "/customers/acme/calls/1")).code).toBe("VALID");
      expect((await verify(other, "/customers/acme/invoices")).code).toBe("RESTRICTED");
    });
  });

  describe("a limit on /customers/*/calls/**", () => {
    let key: string;
    beforeAll(async () => {
      key = await keyWith("counted", { ratelimits: [{ name: "calls", limit: 1000, windowSeconds: 3600, paths: ["/customers/*/calls/**"] }] });
    });
    /** The limit's remaining after the request, or undefined when the limit did not count it. */
    const counted = async (path: string, through: "verify" | "auth") => {
      if (through === "verify") return (await verify(key, path)).ratelimits?.find((r) => r.name === "calls")?.remaining;
      const res = await auth(key, path);
      expect(res.status).toBe(200);
      const field = res.headers["ratelimit"] as string | undefined;
      return field === undefined ? undefined : Number(/r=(\d+)/.exec(field)![1]);
    };

    it.each([
      ["/customers/acme/calls/1"],
      ["/tenants/acme/calls/1"],
      ["/Customers/acme/calls/1"],
      ["/TENANTS/acme/calls/1"],
      ["/customers/acme/Calls/1"],
      ["/CUSTOMERS/ACME/CALLS/1"],
      ["/customers;a=b/acme/calls/1"],
      ["/customers/acme/calls;jsessionid=1/2"],
      ["/customers/acme/x/..;/calls/1"],
      ["/Tenants;x/acme/CALLS%2F1"],
    ])("counts %s, on /verify and on /auth", async (path) => {
      for (const through of ["verify", "auth"] as const) {
        const before = await counted("/customers/acme/calls/0", "verify");
        const after = await counted(path, through);
        expect(`${through} ${path}: ${after}`).toBe(`${through} ${path}: ${before! - 1}`);
      }
    });

    it.each([["/customers/acme/invoices"], ["/Customers/acme/Invoices/calls"], ["/customers;calls/acme/keys"]])("does not count %s", async (path) => {
      for (const through of ["verify", "auth"] as const) expect(await counted(path, through)).toBeUndefined();
    });
  });

  describe("keyplane's own key paths", () => {
    // They route only as written (docs/api.md, "Paths and scopes"): another spelling reaches nothing.
    it.each([
      ["/Customers/acme/keys"],
      ["/TENANTS/acme/keys"],
      ["/customers;v=1/acme/keys"],
      [`/Domains/${D1}/keys`],
      [`/domains;v=1/${D1}/keys`],
      [`/domains/${D1}/Keys`],
    ])("answer 404 to %s", async (path) => {
      const res = await svc.as(acme.keys.customer).get(path);
      expect([res.status, res.body.error]).toEqual([404, "not_found"]);
    });

    it.each([["/customers/acme;v=1/keys"], [`/customers/acme/domains/${D1};v=1/keys`], [`/domains/${D1};x/keys`], ["/customers/self;x/keys"]])(
      "refuse an identifier that keeps a parameter: %s",
      async (path) => {
        const res = await svc.as(acme.keys.customer).get(path);
        expect([res.status, res.body.error]).toEqual([401, "unauthorized"]);
      },
    );

    it("take tenants and apikeys as they always did", async () => {
      expect((await svc.as(acme.keys.customer).get("/tenants/acme/apikeys")).status).toBe(200);
    });
  });
});
