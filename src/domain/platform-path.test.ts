import { describe, expect, it } from "vitest";
import { normalizePath, platformTarget } from "./platform-path.ts";

describe("normalizePath", () => {
  it.each([
    ["/customers/acme/keys", ["customers", "acme", "keys"]],
    ["/customers/%61cme/keys", ["customers", "acme", "keys"]],
    ["/customers/a%2Fb/keys", ["customers", "a/b", "keys"]],
    ["/customers/acme/../globex/keys", ["customers", "globex", "keys"]],
    ["/customers/acme/./keys", ["customers", "acme", "keys"]],
    ["/customers/acme/%2E%2E/globex", ["customers", "globex"]],
    ["/applications/ivr/.", ["applications", "ivr", ""]],
    ["/applications/ivr/x/..", ["applications", "ivr", ""]],
    ["/applications/ivr/", ["applications", "ivr", ""]],
    ["/keys?x=/..", ["keys"]],
    ["/", [""]],
  ])("%s -> %j", (path, segments) => expect(normalizePath(path)).toEqual(segments));

  it.each([["/.."], ["/a/../.."], ["/%2e%2e/x"], ["/bad%zz"], ["/bad%"], ["relative"], [""], ["http://x/y"]])("refuses %s", (path) => {
    expect(normalizePath(path)).toBeUndefined();
  });
});

describe("platformTarget", () => {
  const target = (path: string) => platformTarget(normalizePath(path)!);
  it.each([
    ["/customers/acme/invoices", { customer: "acme" }, false],
    ["/tenants/acme/domains/sip.acme.example/calls", { customer: "acme", domain: "sip.acme.example" }, false],
    ["/customers/acme/domains/d/applications/ivr", { customer: "acme", domain: "d", application: "ivr" }, true],
    ["/customers/acme/domains/d/subscribers/1212/voicemail", { customer: "acme", domain: "d", subscriber: "1212" }, false],
    ["/domains/d/applications/ivr/", { domain: "d", application: "ivr" }, true],
    ["/applications/ivr", { application: "ivr" }, true],
    ["/applications/ivr/.", { application: "ivr" }, true],
    ["/applications/ivr/calls", { application: "ivr" }, false],
    ["/subscribers/self/calls", { subscriber: "self" }, false],
    ["/calls/today", {}, false],
    ["/customers", {}, false],
    ["/customers/acme/subscribers/1212", { customer: "acme" }, false],
    ["/domains/d/domains/e", { domain: "d" }, false],
  ])("%s names %j", (path, refs, atApplication) => expect(target(path)).toEqual({ refs, atApplication }));
});
