// The entries of a policy's `ips`, `referrers` and `paths` as regular expressions, so that a JSON
// schema (/openapi.json) can say what the parsers (cidr.ts, referrer.ts, glob-path.ts) take. The
// parsers stay the authority; entry-patterns.test.ts holds each pattern to its parser, entry by entry.
// Written for every regex dialect a schema's reader may use (ECMAScript with and without the u flag,
// Python's re): no lookbehind, no named groups, no Unicode classes.

const OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])"; // no leading zero: some readers take it for octal
const IPV4 = `(?:${OCTET}\\.){3}${OCTET}`;
const H16 = "[0-9A-Fa-f]{1,4}";
const LS32 = `(?:${H16}:${H16}|${IPV4})`;
/** RFC 3986 3.2.2's IPv6address: every text form of RFC 4291 2.2, an IPv4 address as the last 32 bits. */
const IPV6 = [
  `(?:${H16}:){6}${LS32}`,
  `::(?:${H16}:){5}${LS32}`,
  `(?:${H16})?::(?:${H16}:){4}${LS32}`,
  `(?:(?:${H16}:){0,1}${H16})?::(?:${H16}:){3}${LS32}`,
  `(?:(?:${H16}:){0,2}${H16})?::(?:${H16}:){2}${LS32}`,
  `(?:(?:${H16}:){0,3}${H16})?::${H16}:${LS32}`,
  `(?:(?:${H16}:){0,4}${H16})?::${LS32}`,
  `(?:(?:${H16}:){0,5}${H16})?::${H16}`,
  `(?:(?:${H16}:){0,6}${H16})?::`,
].map((form) => `(?:${form})`).join("|");

/** An `ips` entry: an IPv4 or IPv6 address, each with an optional prefix length (0-32, 0-128). */
export const IP_ENTRY = new RegExp(`^(?:${IPV4}(?:/(?:3[0-2]|[12]?[0-9]))?|(?:${IPV6})(?:/(?:12[0-8]|1[01][0-9]|[1-9]?[0-9]))?)$`);

/** A DNS label as an http(s) URL's host may hold it in ASCII (an IDN in its xn-- form), or `*`. */
const LABEL = "(?:\\*|[A-Za-z0-9_-]+)";
/** The host's last label, or one `*`: a last label starting with a digit would be read as IPv4's. */
const LAST_LABEL = "(?:\\*|[A-Za-z_-][A-Za-z0-9_-]*)";
const PORT = "(?:6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{0,3}|0)";
/**
 * A referrer pattern's authority: DNS labels (a `*` label for one or more), an IPv4 address or a
 * bracketed IPv6 one, and a port. No user information: a referrer with it matches nothing.
 */
export const REFERRER_AUTHORITY = new RegExp(`^(?:(?:${LABEL}\\.)*${LAST_LABEL}|${IPV4}|\\[(?:${IPV6})\\])(?::${PORT})?$`);
/**
 * A `referrers` entry: `*`, or an absolute http(s) URL of that authority and a path (a `/` or `\\`
 * and anything but spaces, control characters, a query or a fragment).
 */
export const REFERRER_ENTRY = new RegExp(
  `^(?:\\*|[Hh][Tt][Tt][Pp][Ss]?://${REFERRER_AUTHORITY.source.slice(1, -1)}(?:[/\\\\][^\\s\\x00-\\x1f\\x7f?#]*)?)$`,
);

const HEX = "[0-9A-Fa-f]";
const TAIL = `%[89ABab]${HEX}`;
/** One character percent-encoded as UTF-8 (RFC 3629 4), as decodeURIComponent takes it: no overlong form, no surrogate. */
const ESCAPE = [
  `%[0-7]${HEX}`,
  `%[Cc][2-9A-Fa-f]${TAIL}`,
  `%[Dd]${HEX}${TAIL}`,
  `%[Ee]0%[AaBb]${HEX}${TAIL}`,
  `%[Ee][1-9A-Ca-cEeFf]${TAIL}${TAIL}`,
  `%[Ee][Dd]%[89]${HEX}${TAIL}`,
  `%[Ff]0%[9ABab]${HEX}${TAIL}${TAIL}`,
  `%[Ff][1-3]${TAIL}${TAIL}${TAIL}`,
  `%[Ff]4%8${HEX}${TAIL}${TAIL}`,
].join("|");
/** A literal segment: not `.` or `..` in any spelling, no `*`, `?` or `#`, every `%` a whole escape. */
const LITERAL = `(?!(?:\\.|%2[Ee]){1,2}(?:/|$))(?:[^/*?#%]|${ESCAPE})*`;

/** A `paths` entry: starting with `/`, its segments literal, `*` or `**`. */
export const PATH_ENTRY = new RegExp(`^(?:/(?:\\*\\*?|${LITERAL}))+$`);
