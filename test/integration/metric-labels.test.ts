// The label scan the isolation matrix and the fuzz suite end with (test/support/metric-labels.ts) finds
// what it looks for: a scan that could not fail would prove nothing.
import { describe, expect, it } from "vitest";
import { labelProblems } from "../support/metric-labels.ts";

describe("the metric label scan", () => {
  const line = (labels: string) => `keyplane_http_requests_total{${labels}} 1`;

  it("passes route patterns, fixed words and numbers outside labels", () => {
    const text = [
      "# HELP keyplane_http_requests_total acme XI0123456789ABCDEF0123456789ABCDEF",
      line('method="GET",route="/customers/:customer/domains/:domain/keys",status="200"'),
      line('method="other",route="unmatched",status="404"'),
      line('method="GET",route="/keys/self",status="401"'),
      line('method="GET",route="/",status="200"'),
      line('method="GET",route="/openapi.json",status="200"'),
    ].join("\n");
    expect(labelProblems(text, ["acme", "ivr"])).toEqual([]);
  });

  it.each([
    ["a token", 'route="/keys/XI0123456789ABCDEF0123456789ABCDEF"'],
    ["a token in lower case", 'method="xi0123456789abcdef0123456789abcdef"'],
    ["a customer's name", 'route="/customers/acme/keys"'],
    ["a key's name alone", 'name="ivr"'],
    ["a raw path with an id", 'route="/applications/12/keys"'],
    ["a raw path with an msisdn", 'route="/subscribers/12125550100/keys"'],
  ])("finds %s", (_what, labels) => {
    expect(labelProblems(line(labels), ["acme", "ivr"])).not.toEqual([]);
  });
});
