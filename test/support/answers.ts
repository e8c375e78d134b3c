import { expect } from "vitest";

// What the HTTP suites expect of an answer: its status, with the body shown when it is another; and of
// a refusal, the JSON error body of docs/api.md ("Errors").
export type Answering = PromiseLike<{ status: number; body: unknown }>;

/** The body of an answer that must have `status`. */
export async function ok<T>(request: Answering, status = 200): Promise<T> {
  const res = await request;
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  return res.body as T;
}

/** A refusal: `status`, and the error body with that status, the `error` code and a message. */
export async function refused(request: Answering, status: number, error: string): Promise<{ message: string }> {
  const res = await request;
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.body).toMatchObject({ status, error, message: expect.stringMatching(/\w/) });
  return res.body as { message: string };
}
