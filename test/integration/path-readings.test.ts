import { Agent, request } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuthHandler } from "../../src/http/verification/auth-routes.ts";
import { parseTrustedProxies } from "../../src/http/verification/client-address.ts";
import { listen, type Listening } from "../../src/http/server.ts";
import { backends } from "../support/databases.ts";
import { startService, type TestService } from "../support/service.ts";
import { createTenant, type Tenant } from "../support/world.ts";

// Spellings of platform paths that upstreams read differently (docs/api.md, "Verification"): an
// encoded slash or backslash kept inside its segment or read as a separator, a literal backslash,
// empty segments merged, a second decoding, scope keywords in any case, `;` parameters kept or removed. For every key level, through POST /verify and /auth (nginx,
// Traefik and Envoy conventions), over real HTTP, each spelled path must answer what the stricter of
// its plain forms answers: the forms worked out here, independently of keyplane, under each reading,
// then asked of keyplane without any of those characters. A double encoding is refused outright.

const D1 = "sip.acme.example";
const D2 = "media.acme.example";
const SUB = "12125550100";

/** [spelled path, method]: the paths as a gateway would hand them on. */
const CASES: [string, string][] = [
  // The reported climb, and its spellings.
  [`/domains/${D1}/..%2F${D2}/trunks`, "GET"],
  [`/domains/${D1}/..%2f${D2}/trunks`, "GET"],
  [`/domains/${D1}/..%5C${D2}/trunks`, "GET"],
  [`/domains/${D1}/..%5c${D2}/trunks`, "GET"],
  [`/domains/${D1}/..\\${D2}/trunks`, "GET"],
  [`/domains/${D1}/%2E%2E%2F${D2}/trunks`, "GET"],
  [`/domains/${D1}/x/..%2F..%2F${D2}/trunks`, "GET"],
  [`/domains/${D1}/..%2F%2F${D2}/trunks`, "GET"],
  [`/domains/${D2}/..%2F${D1}/trunks`, "GET"],
  // Mixed with plain and encoded dot segments.
  [`/domains/${D1}/.%2F..%2F${D2}/trunks`, "GET"],
  [`/domains/${D1}/x%2F../../${D2}/trunks`, "GET"],
  [`/domains/${D2}%2F../${D1}/trunks`, "GET"],
  [`/domains/${D2}/..%2F./${D1}/trunks`, "GET"],
  [`/domains/${D1}/x%5C..%5C..\\${D2}/trunks`, "GET"],
  // With self.
  [`/domains/self/..%2F${D2}/trunks`, "GET"],
  [`/domains/${D2}/..%2Fself/trunks`, "GET"],
  [`/subscribers/self/..%5C..%5Cdomains/${D1}/calls`, "GET"],
  [`/applications/self/x%2F..%2F..%2F..%2Fsubscribers/self/voicemail`, "GET"],
  // Across customers, and from an application to its neighbours.
  [`/customers/acme/domains/${D1}/..%2F..%2F..%2Fglobex/invoices`, "GET"],
  [`/customers/acme%2F..%2Fglobex/invoices`, "GET"],
  [`/applications/ivr/..%2F..%2Fsubscribers/${SUB}/voicemail`, "GET"],
  // An application's own configuration: read-only under one reading only.
  ["/applications/ivr/x%2F..", "PUT"],
  ["/applications/ivr/x%5C..", "PUT"],
  ["/applications/ivr%2F.", "GET"],
  // Empty segments, plain and encoded.
  [`/domains//${D2}/trunks`, "GET"],
  [`//domains/${D2}/trunks`, "GET"],
  [`/%2Fdomains/${D2}/trunks`, "GET"],
  // Climbs above the root under one reading.
  ["/domains/..%2F..%2Ftrunks", "GET"],
  [`/..%2Fdomains/${D1}/trunks`, "GET"],
  [`/domains/${D1}/..\\..\\..\\trunks`, "GET"],
  // Double encodings.
  [`/domains/${D1}/..%252F${D2}/trunks`, "GET"],
  [`/domains/${D1}/..%252f${D2}/trunks`, "GET"],
  [`/domains/${D1}/..%255C${D2}/trunks`, "GET"],
  [`/domains/${D1}/%252E%252E/${D2}/trunks`, "GET"],
  [`/%2564omains/${D2}/trunks`, "GET"],
  [`/domains/${D1}/a%252Fb/trunks`, "GET"],
  // Encoded slashes that climb nowhere, and characters that are no separators: as before.
  [`/domains/${D1}/a%2Fb/trunks`, "GET"],
  [`/domains/${D1}/a%5Cb/trunks`, "GET"],
  [`/domains/${D1}/files/report%202024.pdf`, "GET"],
  [`/domains/${D1}/users/ops%40acme.example`, "GET"],
  [`/domains/sip%2Eacme%2Eexample/calls`, "GET"],
  [`/customers/%61cme/domains/${D1}/subscribers/${SUB}/calls%3Fday%3D1`, "GET"],
  // Scope keywords in any case (an upstream that routes without regard to case), `tenants`.
  [`/Domains/${D2}/trunks`, "DELETE"],
  [`/DOMAINS/${D2}/trunks`, "DELETE"],
  [`/Domains/${D1}/trunks`, "DELETE"],
  [`/doma%C4%B1ns/${D2}/trunks`, "DELETE"],
  [`/DOMA%C4%B0NS/${D2}/trunks`, "DELETE"],
  [`/Tenants/acme/domains/${D1}/calls`, "GET"],
  [`/TENANTS/globex/invoices`, "GET"],
  [`/Customers/acme/Domains/${D2}/calls`, "GET"],
  [`/Subscribers/${SUB}/voicemail`, "GET"],
  ["/Applications/ivr", "PUT"],
  ["/APPLICATIONS/ivr/", "GET"],
  // `;` parameters, kept or removed (Tomcat, Spring), alone and with the spellings above.
  [`/domains;v=1/${D2}/trunks`, "DELETE"],
  [`/domains;v=1/${D1}/trunks`, "DELETE"],
  [`/domains/${D2};x/trunks`, "GET"],
  [`/domains/${D1};x/trunks`, "GET"],
  [`/domains/${D1}/trunks;jsessionid=1`, "GET"],
  [`/domains/${D1}/..;/${D2}/trunks`, "GET"],
  [`/domains/${D1}/x/..;x/..;/${D2}/trunks`, "GET"],
  [`/Domains;v=1/${D2}/trunks`, "GET"],
  [`/tenants;x/acme/invoices`, "GET"],
  [`/customers;x/globex/invoices`, "GET"],
  ["/applications;v=1/ivr", "PUT"],
  ["/applications/ivr;v=1", "GET"],
  [`/domains/${D1}/..%3B/${D2}/trunks`, "GET"],
  [`/domains/${D1};%2F..%2F..%2Fdomains%2F${D2}/trunks`, "GET"],
  [`/domains/${D1}/..%2FDomains;x%2F..%2F..%2FDOMAINS%2F${D2}/trunks`, "GET"],
  [`/x/../Domains/${D2}/trunks`, "GET"],
  [`/x/..;/Domains/${D2}/trunks`, "GET"],
];

/** RFC 3986 5.2.4 over segments; undefined for a climb above the root. */
function removeDots(segments: string[]): string[] | undefined {
  const out: string[] = [];
  for (const [i, s] of segments.entries()) {
    const isLast = i === segments.length - 1;
    if (s === "..") {
      if (out.pop() === undefined) return undefined;
    }
    if (s === "." || s === "..") {
      if (isLast) out.push("");
    } else out.push(s);
  }
  return out;
}

const merge = (segments: string[]) => segments.filter((s, i) => s !== "" || i === segments.length - 1);

const KEYWORDS = ["CUSTOMERS", "TENANTS", "DOMAINS", "APPLICATIONS", "SUBSCRIBERS"];
/** A scope keyword in any case (as Java and .NET compare, `ı` and `İ` are `I`) in lower case; the names here are none. */
const lowerKeyword = (s: string) => {
  const upper = s.toUpperCase().replace(/\u0130/g, "I");
  return KEYWORDS.includes(upper) ? upper.toLowerCase() : s;
};
const withoutParameters = (s: string) => s.replace(/;.*/, "");

/**
 * The plain paths `spelled` comes to under each reading: decoded once (and twice where an escape is
 * left); encoded slashes and backslashes kept in their segment, or read as separators; `;` parameters
 * kept, or removed before or after the separators are read; empty segments merged before or after dot
 * segments go; scope keywords in lower case. A segment still holding `/`, `\`, `%` or `;` names
 * nothing (no name may hold them): it becomes a word that names nothing either.
 */
function plainForms(spelled: string): { forms: string[]; climbs: boolean; decodedTwice: boolean } {
  const once = spelled.split("/").slice(1).map(decodeURIComponent);
  const decodedTwice = once.some((s) => /%[0-9a-f]{2}/i.test(s));
  const decodings = decodedTwice ? [once, once.map(decodeURIComponent)] : [once];
  const forms = new Set<string>();
  let climbs = false;
  for (const decoded of decodings) {
    const split = (segments: string[]) => segments.flatMap((s) => s.split(/[/\\]/));
    const stripped = decoded.map(withoutParameters);
    for (const segments of [decoded, split(decoded), stripped, split(stripped), split(decoded).map(withoutParameters)]) {
      const dotsFirst = removeDots(segments);
      for (const normalised of [removeDots(merge(segments)), dotsFirst && merge(dotsFirst)]) {
        if (!normalised) climbs = true;
        else forms.add("/" + normalised.map((s) => (/[/\\%;]/.test(s) ? "no-such-entity" : lowerKeyword(s))).join("/"));
      }
    }
  }
  return { forms: [...forms], climbs, decodedTwice };
}

describe("plainForms, the reference the table is judged by", () => {
  it("reads the reported climb both ways", () => {
    expect(plainForms(`/domains/${D1}/..%2F${D2}/trunks`)).toEqual({ forms: [`/domains/${D1}/no-such-entity/trunks`, `/domains/${D2}/trunks`], climbs: false, decodedTwice: false });
    expect(plainForms(`/domains//${D2}/x`).forms).toEqual([`/domains/${D2}/x`]);
    expect(plainForms("/a/..%2F..").climbs).toBe(true);
    expect(plainForms(`/d/%252E%252E/x`)).toEqual({ forms: ["/d/no-such-entity/x", "/x"], climbs: false, decodedTwice: true });
    expect(plainForms(`/Domains;v=1/${D2}/x`).forms).toEqual([`/no-such-entity/${D2}/x`, `/domains/${D2}/x`]);
    expect(plainForms(`/domains/${D1}/..;/${D2}/x`).forms).toEqual([`/domains/${D1}/no-such-entity/${D2}/x`, `/domains/${D2}/x`]);
  });
});

describe.each(backends())("path readings over HTTP on %s", (backend) => {
  let svc: TestService;
  let acme: Tenant;
  let globex: Tenant;
  let server: Listening;
  let envoy: Listening;
  let traefik: Listening;
  const agent = new Agent({ keepAlive: true });

  beforeAll(async () => {
    svc = await startService(backend);
    acme = await createTenant(svc, "acme");
    globex = await createTenant(svc, "globex");
    server = await listen(svc.app, 0, "127.0.0.1");
    // Envoy's deep paths are in no template of /openapi.json: asked of the handler in front, as keyplane.ts puts it.
    envoy = await listen(new AuthHandler(svc.ctx, parseTrustedProxies(""), "envoy").inFrontOf((_req, res) => res.writeHead(404).end()), 0, "127.0.0.1");
    // keyplane reads one gateway's headers (KEYPLANE_AUTH_GATEWAY); the service above reads nginx's.
    traefik = await listen(new AuthHandler(svc.ctx, parseTrustedProxies(""), "traefik").inFrontOf((_req, res) => res.writeHead(404).end()), 0, "127.0.0.1");
  });
  afterAll(async () => {
    agent.destroy();
    await envoy?.close(0);
    await traefik?.close(0);
    await server?.close(0);
    await svc?.stop();
  });

  /** One raw request: no client library rewrites its path (dot segments, backslashes). */
  const send = (base: string, method: string, path: string, headers: Record<string, string>, body?: string) =>
    new Promise<{ status: number; text: string; scope: boolean }>((resolve, reject) => {
      // Options, not a URL: a URL's parser would remove the dot segments and turn backslashes into slashes.
      const { hostname, port } = new URL(base);
      const req = request({ hostname, port, path, method, headers, agent }, (res) => {
        let text = "";
        res.on("data", (chunk: Buffer) => (text += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, text, scope: String(res.headers["www-authenticate"]).includes("insufficient_scope") }));
      });
      req.on("error", reject);
      req.end(body);
    });

  const verify = async (key: string, path: string, method: string) => {
    const body = JSON.stringify({ key, path, method });
    const res = await send(server.url, "POST", "/verify", { "Content-Type": "application/json", "Content-Length": String(Buffer.byteLength(body)) }, body);
    return res.status === 200 ? (JSON.parse(res.text) as { code: string }).code : `HTTP ${res.status}`;
  };
  const verdictOf = (res: { status: number; scope: boolean }) => (res.status === 200 ? "VALID" : res.status === 401 && res.scope ? "FORBIDDEN" : `HTTP ${res.status}`);
  const bearer = (key: string) => ({ Authorization: `Bearer ${key}` });
  const CONVENTIONS: Record<string, (key: string, path: string, method: string) => Promise<string>> = {
    verify,
    nginx: async (key, path, method) => verdictOf(await send(server.url, "GET", "/auth", { ...bearer(key), "X-Original-Method": method, "X-Original-URI": path })),
    traefik: async (key, path, method) => verdictOf(await send(traefik.url, "GET", "/auth", { ...bearer(key), "X-Forwarded-Method": method, "X-Forwarded-Uri": path })),
    envoy: async (key, path, method) => verdictOf(await send(envoy.url, method, `/auth${path}`, bearer(key))),
  };

  const keysByLevel = () => ({
    customer: acme.keys.customer, domain: acme.keys.domain, "domain 2": acme.keys.otherDomain, application: acme.keys.application,
    subscriber: acme.keys.subscriber, "customer user": acme.keys.customerUser, "domain user": acme.keys.domainUser, "another customer": globex.keys.customer,
  });

  it("answers each spelling as the stricter of its plain forms, for every key level and gateway convention", async () => {
    const wrong: string[] = [];
    for (const [spelled, method] of CASES) {
      const { forms, climbs, decodedTwice } = plainForms(spelled);
      for (const [level, key] of Object.entries(keysByLevel())) {
        // Asked cold first, then once the plain forms' answers are kept, then from the kept verdict.
        const cold = await Promise.all(Object.values(CONVENTIONS).map((ask) => ask(key, spelled, method)));
        const plain = await Promise.all(forms.map((form) => verify(key, form, method)));
        const expected = climbs || decodedTwice || plain.some((code) => code !== "VALID") ? "FORBIDDEN" : "VALID";
        const warm = await Promise.all(Object.values(CONVENTIONS).map((ask) => ask(key, spelled, method)));
        for (const [i, name] of Object.keys(CONVENTIONS).entries()) {
          for (const got of [cold[i], warm[i]]) if (got !== expected) wrong.push(`${level} ${method} ${spelled} via ${name}: ${got}, not ${expected} (${forms.map((f, j) => `${f} ${plain[j]}`).join("; ")})`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it("refuses the reported climb to the domain's key, on every convention, though it reaches its own domain", async () => {
    const climb = `/domains/${D1}/..%2F${D2}/trunks`;
    for (const ask of Object.values(CONVENTIONS)) {
      expect(await ask(acme.keys.domain, `/domains/${D1}/trunks`, "GET")).toBe("VALID");
      expect(await ask(acme.keys.domain, climb, "GET")).toBe("FORBIDDEN");
      expect(await ask(acme.keys.otherDomain, climb, "GET")).toBe("FORBIDDEN");
      expect(await ask(acme.keys.customer, climb, "GET")).toBe("VALID");
    }
  });

  it("lets ordinary encoded characters through as before", async () => {
    const paths: [string, string][] = [
      [acme.keys.domainUser, `/domains/${D1}/files/report%202024.pdf`],
      [acme.keys.domainUser, `/domains/${D1}/users/ops%40acme.example`],
      [acme.keys.domainUser, `/domains/${D1}/a%2Fb`],
      [acme.keys.customer, "/customers/%61cme/invoices"],
    ];
    for (const ask of Object.values(CONVENTIONS)) {
      for (const [key, path] of paths) expect(`${path}: ${await ask(key, path, "GET")}`).toBe(`${path}: VALID`);
    }
  });
});
