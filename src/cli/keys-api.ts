// The REST API as the `keyplane keys` command sees it: a base URL, a bearer token, and one error type
// whose message is the one line the command prints. No token is ever part of a message.
export class CliError extends Error {}

export interface ApiClient {
  request(method: string, path: string, body?: unknown): Promise<unknown>;
}

export function apiClient(baseUrl: string, token: string, fetchImpl: typeof fetch = fetch): ApiClient {
  const base = baseUrl.replace(/\/+$/, "");
  return {
    async request(method, path, body) {
      let res: Response;
      try {
        res = await fetchImpl(base + path, {
          method,
          headers: { Authorization: `Bearer ${token}`, ...(body !== undefined && { "Content-Type": "application/json" }) },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(30_000),
        });
      } catch (error) {
        const { cause } = error as { cause?: { code?: string; message?: string } };
        const why = cause?.code ?? cause?.message ?? (error as Error).message;
        throw new CliError(`cannot reach ${base}: ${why}`);
      }
      const text = await res.text();
      const json = text ? parseJson(text) : undefined;
      if (!res.ok) {
        const problem = json as { error?: string; message?: string } | undefined;
        throw new CliError(problem?.message ? `${problem.message} (${res.status} ${problem.error})` : `${method} ${path}: HTTP ${res.status}`);
      }
      return json;
    },
  };
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError("the server's answer is not JSON: is KEYPLANE_URL a keyplane server?");
  }
}
