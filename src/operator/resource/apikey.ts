// resource/ of operator/: the ApiKey custom resource and its CRD, its status, its Secret, and what it
// names (durations, object references, namespace bindings). It may use domain/.
//
// The ApiKey custom resource (docs/operator.md): its names, the zod schemas of spec and status, the types of
// the whole object, and the effective values of a spec. crd.ts turns these schemas into the CRD.
import { z } from "zod";
import { keyNameSchema } from "../../domain/keys/key-name.ts";
import type { V1ObjectMeta } from "@kubernetes/client-node";
import type { KeyType } from "../../domain/model.ts";
import type { ScopeRefs } from "../../domain/scope/scope.ts";
import type { Policy } from "../../domain/policy/policy.ts";
import { GO_DURATION_PATTERN, parseGoDuration } from "./duration.ts";
import { policySpecSchema } from "./policy-spec.ts";

export const GROUP = "keyplane.dev";
export const CRD_VERSION = "v1alpha1";
export const API_VERSION = `${GROUP}/${CRD_VERSION}`;
export const KIND = "ApiKey";
export const PLURAL = "apikeys";
export const SINGULAR = "apikey";
export const SHORT_NAME = "ak";
export const FINALIZER = "keyplane.dev/finalizer";
export const MANAGED_BY_LABEL = "app.kubernetes.io/managed-by";
export const MANAGED_BY_VALUE = "keyplane";
/** An annotation whose every new value asks for one rotation (docs/operator.md, "Rotation"). */
export const ROTATE_ANNOTATION = "keyplane.dev/rotate";

// Patterns are anchored and free of look-arounds: the API server evaluates them with Go's RE2.
// An id (digits), a uuid and a customer or application name are all 1-64 of A-Za-z0-9._- (docs/api.md, "Directory").
const directoryRef = (what: string) =>
  z.string().min(1).max(64).regex(/^[A-Za-z0-9._-]+$/, `must be the ${what}'s id, uuid or name (A-Za-z0-9._-)`);
// A subscriber's msisdn may start with "+".
const subscriberRef = z.string().min(1).max(64).regex(/^\+?[A-Za-z0-9._-]+$/, "must be the subscriber's msisdn, id or uuid");
const hostLabel = "[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?";
const dnsLabel = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";

/** A Secret's name: a DNS subdomain. */
export const secretNameSchema = z
  .string()
  .max(253)
  .regex(new RegExp(`^${dnsLabel}(\\.${dnsLabel})*$`), "must be a DNS subdomain (lower-case a-z, 0-9, '-' and '.')");
/** A data key of a Secret: A-Za-z0-9._-, at most 253, not ".", ".." nor starting with "..". */
export const secretKeySchema = z
  .string()
  .max(253)
  .regex(/^\.?[-_A-Za-z0-9][-._A-Za-z0-9]*$/, "must be a Secret data key (A-Za-z0-9._-, not '.', '..' nor '..'-prefixed)");

const stringMap = z.record(z.string(), z.string());

/** The fields the scope rules look at. */
interface ScopeFields {
  domain?: string | undefined;
  application?: string | undefined;
  subscriber?: string | undefined;
}

/** The scope combinations: zod checks them here, and crd.ts renders the same list as CEL rules. */
export const scopeRules: readonly { field: keyof ScopeFields; message: string; cel: string; holds: (s: ScopeFields) => boolean }[] = [
  {
    field: "application",
    message: "application needs domain: an application is named within its domain",
    cel: "!has(self.application) || has(self.domain)",
    holds: (s) => s.application === undefined || s.domain !== undefined,
  },
  {
    field: "subscriber",
    message: "subscriber needs domain: a subscriber is named within its domain",
    cel: "!has(self.subscriber) || has(self.domain)",
    holds: (s) => s.subscriber === undefined || s.domain !== undefined,
  },
  {
    field: "subscriber",
    message: "application and subscriber exclude each other: a key's scope is one or the other",
    cel: "!(has(self.application) && has(self.subscriber))",
    holds: (s) => s.application === undefined || s.subscriber === undefined,
  },
];

/** Bounds of spec.rotation that a pattern cannot say; checked by resolveSpec and reported as InvalidSpec. */
export const MIN_ROTATION_EVERY_MS = 10_000;
export const MAX_GRACE_PERIOD_MS = 720 * 3_600_000;
/** The grace period of a rotation the spec says nothing of (asked for by annotation alone). */
const DEFAULT_GRACE_PERIOD = "1h";
export const DEFAULT_GRACE_PERIOD_MS = parseGoDuration(DEFAULT_GRACE_PERIOD) ?? 0;

const goDuration = z.string().regex(new RegExp(GO_DURATION_PATTERN), "must be a Go duration of h, m and s, such as 720h or 1h30m");

export const rotationSchema = z
  .object({
    every: goDuration.describe("Rotate when the current key is this old (a Go duration, at least 10s)."),
    gracePeriod: goDuration
      .default(DEFAULT_GRACE_PERIOD)
      .describe("The old key's longest life once the Secret holds the new one (a Go duration, 0s to 720h)."),
    restartWorkloads: z
      .boolean()
      .default(false)
      .describe("Restart the Deployments, StatefulSets and DaemonSets of the namespace that use the Secret."),
  })
  .superRefine((rotation, ctx) => {
    // A text that is no duration has its own issue from the pattern.
    const every = parseGoDuration(rotation.every);
    const gracePeriod = parseGoDuration(rotation.gracePeriod);
    if (every !== undefined && every < MIN_ROTATION_EVERY_MS) {
      ctx.addIssue({ code: "custom", message: "must be at least 10s", path: ["every"] });
    }
    if (gracePeriod !== undefined && gracePeriod > MAX_GRACE_PERIOD_MS) {
      ctx.addIssue({ code: "custom", message: "must be at most 720h", path: ["gracePeriod"] });
    }
  });

export const deletionPolicySchema = z.enum(["Delete", "Retain"]);

/**
 * How the Secret holds the key: `keyplane`, the token under spec.secret.key; `envoy-gateway`, one entry
 * per live key of the ApiKey, its numeric id to its token, as Envoy Gateway's SecurityPolicy
 * apiKeyAuth.credentialRefs reads a Secret (docs/gateways.md, "Envoy Gateway").
 */
export const SECRET_FORMATS = ["keyplane", "envoy-gateway"] as const;
export type SecretFormat = (typeof SECRET_FORMATS)[number];

export const apiKeySpecSchema = z
  .object({
    customer: directoryRef("customer").describe("The customer (tenant) of the key: its id, uuid or name."),
    domain: z
      .string()
      .max(253)
      .regex(new RegExp(`^${hostLabel}(\\.${hostLabel})*$`), "must be the domain's name, id or uuid")
      .optional()
      .describe("The domain of the key, inside the customer: its name, id or uuid."),
    application: directoryRef("application")
      .optional()
      .describe("The voice application of the key, inside the domain. Needs domain; not with subscriber."),
    subscriber: subscriberRef
      .optional()
      .describe("The subscriber of the key, inside the domain: its msisdn, id or uuid. Needs domain."),
    keyName: keyNameSchema.optional().describe("The name of the key in keyplane. Default: metadata.name."),
    active: z.boolean().default(true).describe("Whether the key authenticates; keyplane keeps it as said here."),
    secret: z
      .object({
        name: secretNameSchema.optional().describe("The Secret that receives the keyId. Default: metadata.name."),
        key: secretKeySchema.default("apiKey").describe("The data key of the keyId in the Secret (format keyplane)."),
        format: z
          .enum(SECRET_FORMATS)
          .default("keyplane")
          .describe("keyplane: the keyId under key. envoy-gateway: one entry per live key, its numeric id to its keyId, for Envoy Gateway's apiKeyAuth."),
        labels: stringMap.optional().describe("Labels copied onto the Secret."),
        annotations: stringMap.optional().describe("Annotations copied onto the Secret."),
      })
      // prefault, not default: the absent object is parsed, so that its own defaults apply.
      .prefault({})
      .describe("Where the keyId is written."),
    deletionPolicy: deletionPolicySchema
      .default("Delete")
      .describe("Delete: the key is deleted with this resource. Retain: the key stays in keyplane."),
    rotation: rotationSchema.optional().describe("When the key is replaced by a new one, and what is restarted then."),
    policy: policySpecSchema.optional(),
  })
  .superRefine((spec, ctx) => {
    for (const rule of scopeRules) {
      if (!rule.holds(spec)) ctx.addIssue({ code: "custom", message: rule.message, path: [rule.field] });
    }
  })
  .describe("The key wanted: its scope, name and state, and the Secret that holds it.");

const int64 = z.int().nonnegative().meta({ format: "int64" });
const dateTime = z.string().meta({ format: "date-time" });

export const conditionSchema = z.object({
  type: z.string().min(1).describe("The condition's type, such as Ready."),
  status: z.enum(["True", "False", "Unknown"]),
  reason: z.string().describe("A CamelCase reason, such as Provisioned or ScopeNotFound."),
  message: z.string().describe("A message for a person."),
  lastTransitionTime: dateTime.describe("When status last changed."),
  observedGeneration: int64.optional().describe("The metadata.generation the condition was computed from."),
});

// An ApiKey never makes a user's key.
const apiKeyTypes = ["customer", "application", "subscriber"] as const satisfies readonly KeyType[];
export const keyTypeSchema = z.enum(apiKeyTypes);

export const apiKeyStatusSchema = z
  .object({
    observedGeneration: int64.optional().describe("The metadata.generation last reconciled."),
    conditions: z
      .array(conditionSchema)
      .optional()
      .meta({ "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"] }),
    key: z
      .object({
        id: int64.describe("The key's numeric id in keyplane."),
        type: keyTypeSchema,
        hint: z.string().describe("The first and last characters of the keyId; never the whole token."),
      })
      .optional()
      .describe("The key in keyplane."),
    secretName: z.string().optional().describe("The Secret that holds the keyId."),
    rotation: z
      .object({
        lastRotationTime: dateTime.optional().describe("When the key was last rotated."),
        nextRotationTime: dateTime.optional().describe("When spec.rotation.every next rotates the key."),
        lastRequest: z.string().optional().describe("The last value of the keyplane.dev/rotate annotation acted on."),
        previousKey: z
          .object({
            id: int64.describe("The replaced key's numeric id in keyplane."),
            hint: z.string().describe("The first and last characters of the replaced keyId."),
            expiresAt: dateTime.describe("When the replaced key stops authenticating at the latest."),
          })
          .optional()
          .describe("The replaced key, while a rotation is under way."),
      })
      .optional()
      .describe("The key's rotations."),
  })
  .describe("What the operator observed, written through the status subresource.");

/** A spec as stored: the API server has applied the CRD's defaults. */
export type ApiKeySpec = z.output<typeof apiKeySpecSchema>;
/** A spec as written by a person, before defaults. */
export type ApiKeySpecInput = z.input<typeof apiKeySpecSchema>;
export type ApiKeyStatus = z.output<typeof apiKeyStatusSchema>;
export type ApiKeyCondition = z.output<typeof conditionSchema>;
export type RotationStatus = NonNullable<ApiKeyStatus["rotation"]>;
export type DeletionPolicy = z.output<typeof deletionPolicySchema>;

export interface ApiKey {
  apiVersion: typeof API_VERSION;
  kind: typeof KIND;
  metadata: V1ObjectMeta;
  spec: ApiKeySpec;
  status?: ApiKeyStatus;
}

/** A spec with every default resolved, metadata.name included. */
export interface EffectiveSpec extends ScopeRefs {
  customer: string;
  keyName: string;
  active: boolean;
  secret: { name: string; key: string; format: SecretFormat; labels: Record<string, string>; annotations: Record<string, string> };
  deletionPolicy: DeletionPolicy;
  rotation?: EffectiveRotation | undefined;
  /** The key's own policy; null for none (a policy set through REST is removed). */
  policy: Policy | null;
}

/** spec.rotation with its durations in milliseconds. */
export interface EffectiveRotation {
  everyMs: number;
  gracePeriodMs: number;
  restartWorkloads: boolean;
}

export type SpecResult = { ok: true; spec: EffectiveSpec } | { ok: false; message: string };

/**
 * Validates a spec and resolves its defaults. The operator must call it on every ApiKey it reads:
 * an API server older than 1.25 ignores the CRD's CEL rules, so only this enforces them there.
 */
export function resolveSpec(apiKey: { metadata: { name?: string | undefined }; spec?: unknown }): SpecResult {
  const name = apiKey.metadata.name ?? "";
  const parsed = apiKeySpecSchema.safeParse(apiKey.spec);
  if (!parsed.success) return { ok: false, message: describeIssues(parsed.error.issues) };
  const spec = parsed.data;
  const keyName = spec.keyName ?? name;
  // metadata.name may be up to 253 characters, the key name only 128.
  const checked = keyNameSchema.safeParse(keyName);
  if (!checked.success) {
    return { ok: false, message: `spec.keyName: ${checked.error.issues[0]?.message} (it defaults to metadata.name)` };
  }
  return {
    ok: true,
    spec: {
      customer: spec.customer,
      domain: spec.domain,
      application: spec.application,
      subscriber: spec.subscriber,
      keyName,
      active: spec.active,
      secret: {
        name: spec.secret.name ?? name,
        key: spec.secret.key,
        format: spec.secret.format,
        labels: spec.secret.labels ?? {},
        annotations: spec.secret.annotations ?? {},
      },
      deletionPolicy: spec.deletionPolicy,
      rotation: spec.rotation && {
        // Both parse: the schema has checked them.
        everyMs: parseGoDuration(spec.rotation.every) ?? 0,
        gracePeriodMs: parseGoDuration(spec.rotation.gracePeriod) ?? 0,
        restartWorkloads: spec.rotation.restartWorkloads,
      },
      policy: spec.policy ?? null,
    },
  };
}

function describeIssues(issues: readonly z.core.$ZodIssue[]): string {
  return issues.map((issue) => `${["spec", ...issue.path.map(String)].join(".")}: ${issue.message}`).join("; ");
}
