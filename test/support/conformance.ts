import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { pathPointer } from "../../src/http/openapi.ts";

// Every answer the HTTP suites receive is checked against /openapi.json: its status is one the
// operation declares (or, for a path no operation has, 404; for a method a path does not take, 405),
// the headers the document requires are there, and its JSON body is valid against the declared
// schema. Violations are collected here; conformance-setup.ts fails the test file that caused them.
export const violations: string[] = [];

type Json = Record<string, unknown>;
interface Operation {
  responses: Record<string, Json>;
}
interface Document {
  paths: Record<string, Json>;
  components: { responses: Record<string, Json> };
}

const DOC_ID = "https://keyplane.test/openapi.json";
const BEFORE_ROUTING = [400, 408, 413, 415];

export class Conformance {
  readonly #doc: Document;
  readonly #ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  readonly #paths: { template: string; pattern: RegExp; params: number }[];

  constructor(doc: object) {
    this.#doc = doc as Document;
    (addFormats as unknown as (ajv: Ajv2020) => void)(this.#ajv);
    this.#ajv.addSchema({ ...doc, $id: DOC_ID });
    // Literal segments win over parameters (/keys/self before /keys/{keyId}), as in the router. A path
    // parameter is one segment, but for /auth/{path}: the rest of the path, which OpenAPI cannot state
    // (its parameter's description says so).
    this.#paths = Object.keys(this.#doc.paths)
      .map((template) => ({
        template,
        pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, "\\$&").replace(/\{path\}$/, ".+").replace(/\{[^}]+\}/g, "[^/]+")}/?$`),
        params: (template.match(/\{/g) ?? []).length,
      }))
      .sort((a, b) => a.params - b.params);
  }

  /** The same handler, every answer of which is checked. */
  wrap(listener: RequestListener): RequestListener {
    return (req, res) => {
      const chunks: Buffer[] = [];
      const write = res.write.bind(res) as (...args: unknown[]) => boolean;
      const end = res.end.bind(res) as (...args: unknown[]) => ServerResponse;
      const keep = (chunk: unknown) => {
        if (typeof chunk === "string") chunks.push(Buffer.from(chunk));
        else if (chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk));
      };
      (res as { write: unknown }).write = (chunk: unknown, ...rest: unknown[]) => (keep(chunk), write(chunk, ...rest));
      (res as { end: unknown }).end = (chunk?: unknown, ...rest: unknown[]) => {
        if (typeof chunk !== "function") keep(chunk);
        return end(chunk, ...rest);
      };
      // Headers given to writeHead alone (as the fast paths give them) are sent without being kept
      // where getHeader looks: they are read from its arguments.
      const given = new Map<string, unknown>();
      const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => ServerResponse;
      (res as { writeHead: unknown }).writeHead = (...args: unknown[]) => {
        const headers = args.find((a) => typeof a === "object" && a !== null);
        const pairs = Array.isArray(headers) ? headers.flatMap((_, i) => (i % 2 === 0 ? [[headers[i], headers[i + 1]]] : [])) : Object.entries(headers ?? {});
        for (const [name, value] of pairs) given.set(String(name).toLowerCase(), value);
        return writeHead(...args);
      };
      const sent = { get statusCode() { return res.statusCode; }, getHeader: (name: string) => res.getHeader(name) ?? given.get(name.toLowerCase()) };
      res.once("finish", () => {
        const problem = this.check(req, sent, Buffer.concat(chunks).toString("utf8"));
        if (problem) violations.push(`${req.method} ${req.url} -> ${res.statusCode}: ${problem}`);
      });
      listener(req, res);
    };
  }

  /** Why an answer does not conform to the document; undefined when it does. */
  check(req: Pick<IncomingMessage, "method" | "url">, res: { statusCode: number; getHeader(name: string): unknown }, body: string): string | undefined {
    const status = res.statusCode;
    if (!res.getHeader("x-request-id")) return "no X-Request-Id";
    const path = (req.url ?? "/").split("?")[0]!;
    const method = (req.method ?? "GET").toLowerCase();
    const operationOf = (template: string) => this.#doc.paths[template]?.[method === "head" ? "get" : method] as Operation | undefined;
    // As the router does: the first path that takes this method answers (/keys/self, else /keys/{keyId}).
    const candidates = this.#paths.filter((p) => p.pattern.test(path)).map((p) => this.#canonical(p.template));
    const template = candidates.find((t) => operationOf(t)) ?? candidates[0];
    const item = template ? this.#doc.paths[template] : undefined;
    const operation = template ? operationOf(template) : undefined;
    if (!template || !item || !operation) {
      // Before any route: a body that is not JSON, too large or malformed is refused for every path.
      const expected = [...(!item ? [404] : [405]), ...BEFORE_ROUTING];
      if (!expected.includes(status)) return `expected ${expected.join(" or ")} for ${item ? "a method the path does not take" : "a path with no operation"}`;
      if (status === 405 && !res.getHeader("allow")) return "405 without Allow";
      return this.#validate(body, `${DOC_ID}#/components/schemas/Error`);
    }
    const declared = operation.responses[String(status)] ?? operation.responses.default;
    if (!declared) return `status ${status} is not declared for ${method.toUpperCase()} ${template}`;
    const response = (declared.$ref ? this.#resolve(declared.$ref as string) : declared) as { headers?: Json; content?: Record<string, Json> };
    for (const header of Object.keys(response.headers ?? {})) {
      const optional = header === "Link";
      if (!optional && !res.getHeader(header)) return `header ${header} missing`;
    }
    if (method === "head") return undefined;
    const json = response.content?.["application/json"];
    if (!response.content) return body === "" ? undefined : "a body where none is declared";
    if (!json) return undefined; // an application's own answer (invoke): any content
    const pointer = declared.$ref
      ? `${DOC_ID}${(declared.$ref as string)}/content/application~1json/schema`
      : `${DOC_ID}${pathPointer(template)}/${method}/responses/${status}/content/application~1json/schema`;
    return this.#validate(body, pointer);
  }

  /** The path an alias's item refers to (its `$ref`), or the path itself. */
  #canonical(template: string): string {
    const ref = this.#doc.paths[template]?.$ref as string | undefined;
    return ref ? pointerKey(decodeURIComponent(ref.replace(/^#\/paths\//, ""))) : template;
  }

  #resolve(ref: string): unknown {
    let node: unknown = this.#doc;
    for (const part of decodeURIComponent(ref.replace(/^#\//, "")).split("/")) node = (node as Json)[pointerKey(part)];
    return node;
  }

  #validate(body: string, schemaRef: string): string | undefined {
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      return "the body is not JSON";
    }
    const validate = this.#ajv.getSchema(schemaRef);
    if (!validate) return `no schema at ${schemaRef}`;
    if (validate(value)) return undefined;
    return `body: ${this.#ajv.errorsText(validate.errors)}`;
  }
}

/** A JSON pointer's token as the key it names (RFC 6901: `~1` is `/`, `~0` is `~`). */
function pointerKey(token: string): string {
  return token.replaceAll("~1", "/").replaceAll("~0", "~");
}
