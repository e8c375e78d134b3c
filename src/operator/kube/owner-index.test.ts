import type { V1Secret } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { OwnerIndex } from "./owner-index.ts";

const secret = (name: string, owners: string[], namespace = "team-a"): V1Secret => ({
  metadata: { name, namespace, ownerReferences: owners.map((uid) => ({ apiVersion: "keyplane.dev/v1alpha1", kind: "ApiKey", name: uid, uid })) },
});
const names = (secrets: V1Secret[]) => secrets.map((s) => s.metadata?.name).sort();

describe("OwnerIndex", () => {
  it("finds the Secrets an owner owns, in its namespace only", () => {
    const index = new OwnerIndex();
    index.update("added", secret("a", ["u1"]));
    index.update("added", secret("b", ["u1", "u2"]));
    index.update("added", secret("c", ["u2"]));
    index.update("added", secret("a", ["u1"], "team-b"));
    expect(names(index.owned("team-a", "u1"))).toEqual(["a", "b"]);
    expect(names(index.owned("team-a", "u2"))).toEqual(["b", "c"]);
    expect(index.owned("team-a", "nobody")).toEqual([]);
    expect(index.owned("team-a", undefined)).toEqual([]);
  });

  it("follows an owner reference that changed, and a Secret that went", () => {
    const index = new OwnerIndex();
    index.update("added", secret("a", ["u1"]));
    index.update("updated", secret("a", ["u2"]));
    expect(index.owned("team-a", "u1")).toEqual([]);
    expect(names(index.owned("team-a", "u2"))).toEqual(["a"]);
    index.update("deleted", secret("a", ["u2"]));
    expect(index.owned("team-a", "u2")).toEqual([]);
  });

  it("hands out the Secret as last seen", () => {
    const index = new OwnerIndex();
    index.update("added", secret("a", ["u1"]));
    const newer = { ...secret("a", ["u1"]), data: { apiKey: "eA==" } };
    index.update("updated", newer);
    expect(index.owned("team-a", "u1")).toEqual([newer]);
  });
});
