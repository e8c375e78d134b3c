import { afterAll, expect } from "vitest";
import { violations } from "./conformance.ts";

// Runs after each test file: any answer that did not conform to /openapi.json fails it.
afterAll(() => {
  expect(violations.splice(0), "answers that do not conform to /openapi.json").toEqual([]);
});
