import { parseAddress, type Address } from "./cidr.ts";
import { foldedReading } from "./glob-path.ts";

// What a policy judges of one request (docs/api.md, "Key policy"), read once per request: its client
// address, referrer, method and path. Each is undefined when the request did not give it or it cannot
// be read (an address that is none, a path that climbs above the root); a restriction on it then refuses.

/** A path's segments as one upstream reads it: percent-decoded, dot segments removed, no query. */
export type PathReading = readonly string[];

export interface RequestFacts {
  address: Address | undefined;
  referrer: string | undefined;
  /** Upper-case, as HTTP methods are compared exactly. */
  method: string | undefined;
  /**
   * Every reading upstreams may take of the path (platform-path.ts works them out for the level rules,
   * docs/api.md "Verification"); a path passes a rule only when each of its readings does.
   */
  paths: readonly PathReading[] | undefined;
  /** The same readings in ASCII lower case, for rate limits (glob-path.ts); the same array when no letter is upper-case. */
  foldedPaths: readonly PathReading[] | undefined;
}

export interface RequestInput {
  ip?: string | undefined;
  referrer?: string | undefined;
  method?: string | undefined;
  paths?: readonly PathReading[] | undefined;
}

export function requestFacts(input: RequestInput): RequestFacts {
  const paths = input.paths !== undefined && input.paths.length > 0 ? input.paths : undefined;
  return {
    address: input.ip ? parseAddress(input.ip) : undefined,
    referrer: input.referrer || undefined,
    method: input.method || undefined,
    paths,
    foldedPaths: paths && foldedReadings(paths),
  };
}

function foldedReadings(paths: readonly PathReading[]): readonly PathReading[] {
  const folded = paths.map(foldedReading);
  return folded.every((reading, i) => reading === paths[i]) ? paths : folded;
}
