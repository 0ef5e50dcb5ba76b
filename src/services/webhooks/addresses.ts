// D-82: where webhooks may be sent. A URL's host is checked when the endpoint is saved and the address
// its name resolves to again when connecting (a name can point anywhere later), so that an endpoint
// cannot make Parley reach its own network: loopback, private, link-local, metadata and the other
// special ranges are refused unless a setting allows them (loopback in local development only, D-170).
// Decimal, hex and octal IPv4 forms are normalised by the WHATWG URL parser before they get here;
// IPv4-mapped, IPv4-translated and NAT64 IPv6 addresses are judged by the IPv4 address they carry; a
// `localhost` name is this host's loopback, never asked of the system's look-up (RFC 6761).
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'metadata' | 'unique-local' | 'reserved';

/** Resolves a name to its addresses (tests inject one: refusals are tested without a socket). */
export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;

export const systemResolver: Resolver = (host) => lookup(host, { all: true, verbatim: true });

export interface AddressPolicy {
  /** Loopback allowed (D-170: in local development only, see addressPolicy). */
  allowLoopback: boolean;
  /** Every non-public address allowed (`--webhook-allow-private`): an endpoint on the team's own network. */
  allowPrivate: boolean;
}

function ipv4Bytes(s: string): number[] | null {
  const parts = s.split('.');
  if (parts.length !== 4) return null;
  const bytes = parts.map(Number);
  return bytes.every((b, i) => /^\d{1,3}$/.test(parts[i]!) && b <= 255) ? bytes : null;
}

/** The 16 bytes of an IPv6 address (an embedded dotted IPv4 tail included), or null. */
function ipv6Bytes(text: string): number[] | null {
  let s = text.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const tail: number[] = [];
  const dotted = s.match(/:(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    const v4 = ipv4Bytes(dotted[1]!);
    if (!v4) return null;
    tail.push(...v4);
    s = `${s.slice(0, -dotted[1]!.length)}0:0`;
  }
  const halves = s.split('::');
  if (halves.length > 2) return null;
  const groups = (h: string) => (h === '' ? [] : h.split(':'));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  const fill = 8 - head.length - rest.length;
  if (fill < 0 || (halves.length === 1 && fill !== 0)) return null;
  const all = [...head, ...Array(fill).fill('0'), ...rest];
  const out: number[] = [];
  for (const g of all) {
    if (!/^[0-9a-f]{1,4}$/i.test(g)) return null;
    const n = Number.parseInt(g, 16);
    out.push(n >> 8, n & 255);
  }
  if (tail.length) out.splice(12, 4, ...tail);
  return out;
}

function classifyV4([a, b, c, d]: number[]): AddressClass {
  if (a === 169 && b === 254 && c === 169 && d === 254) return 'metadata';
  if (a === 127) return 'loopback';
  if (a === 10 || (a === 172 && b! >= 16 && b! <= 31) || (a === 192 && b === 168)) return 'private';
  // Shared address space (carrier-grade NAT) and the benchmarking range are nobody's public hosts.
  if ((a === 100 && b! >= 64 && b! <= 127) || (a === 198 && (b === 18 || b === 19))) return 'private';
  if (a === 169 && b === 254) return 'link-local';
  // "This network" (0.0.0.0 reaches the local host on Linux), IETF assignments, multicast, reserved, broadcast.
  if (a === 0 || (a === 192 && b === 0 && c === 0) || a! >= 224) return 'reserved';
  return 'public';
}

/** An IPv4 address carried in a special IPv6 form: its own class, `reserved` when that is public. */
function specialV4(v4: number[]): AddressClass {
  const kind = classifyV4(v4);
  return kind === 'public' ? 'reserved' : kind;
}

/** What kind of address `ip` (an IPv4 or IPv6 literal) is. */
export function classifyAddress(ip: string): AddressClass {
  const family = isIP(ip.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  if (family === 4) return classifyV4(ipv4Bytes(ip)!);
  const b = family === 6 ? ipv6Bytes(ip) : null;
  if (!b) return 'reserved';
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  // ::ffff:0:0/96 (mapped) and ::ffff:0:0:0/96 (translated) carry an IPv4 address: a public one written
  // so is still special (a host's own IPv4 written for a dual-stack socket, never an endpoint's address).
  const mapped = zero(0, 10) && b[10] === 0xff && b[11] === 0xff;
  const translated = zero(0, 8) && b[8] === 0xff && b[9] === 0xff && zero(10, 12);
  if (mapped || translated) return specialV4(b.slice(12));
  // 64:ff9b::/96, NAT64's well-known prefix, reaches the IPv4 address it carries; 64:ff9b:1::/48 is a
  // network's own translator (local use, RFC 8215).
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return classifyV4(b.slice(12));
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && b[4] === 0 && b[5] === 1) return 'private';
  if (zero(0, 15) && b[15] === 1) return 'loopback';
  if (zero(0, 12)) return 'reserved';
  // fd00:ec2::254, the AWS metadata service over IPv6.
  if (b[0] === 0xfd && b[1] === 0 && b[2] === 0x0e && b[3] === 0xc2 && zero(4, 14) && b[14] === 0x02 && b[15] === 0x54) return 'metadata';
  if ((b[0]! & 0xfe) === 0xfc) return 'unique-local';
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return 'link-local';
  // Site-local (deprecated), multicast, documentation, 6to4 (it carries an IPv4 address of any kind).
  if ((b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) || b[0] === 0xff || (b[0] === 0x20 && b[1] === 0x01 && b[2] === 0x0d && b[3] === 0xb8))
    return 'reserved';
  if (b[0] === 0x20 && b[1] === 0x02) return classifyV4(b.slice(2, 6));
  return 'public';
}

/** Why `ip` may not be reached under `policy`, or null when it may. */
export function refusalOf(ip: string, policy: AddressPolicy): string | null {
  const kind = classifyAddress(ip);
  if (kind === 'public') return null;
  if (kind === 'loopback' && (policy.allowLoopback || policy.allowPrivate)) return null;
  if (kind !== 'loopback' && policy.allowPrivate) return null;
  const setting = kind === 'loopback' ? LOOPBACK_RULE : 'allowed only with --webhook-allow-private';
  return `${ip} is a ${kind} address (${setting})`;
}

/** Whether a URL host (as `new URL().hostname` gives it) is an IP literal. */
export function isAddressLiteral(hostname: string): boolean {
  return isIP(hostname.replace(/^\[|\]$/g, '')) !== 0;
}

/** A name that always means this host, refused as loopback without asking a resolver. */
export function isLocalName(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

/** Whether Parley's own listening host is loopback. */
export function listensOnLoopback(host: string): boolean {
  return isLocalName(host) || (isAddressLiteral(host) && classifyAddress(host) === 'loopback');
}

/** D-170, as a refusal says it (the dashboard's and the CLI's hints say the same). */
export const LOOPBACK_RULE =
  'loopback is allowed only in local development (Parley on loopback, no --public-url), or with --webhook-allow-private';

/**
 * D-170: the addresses endpoints may have. Loopback is local development's only: Parley listening on
 * loopback with no `--public-url` (one means others reach it, e.g. through a TLS proxy on the same
 * host, where loopback is the host's own services); `--webhook-allow-private` allows every address.
 */
export function addressPolicy(listenHost: string, publicUrl: string | null | undefined, allowPrivate: boolean): AddressPolicy {
  return { allowLoopback: listensOnLoopback(listenHost) && !publicUrl, allowPrivate };
}

/** `host`'s addresses: a `localhost` name's are loopback's, whatever the system's look-up would say (RFC 6761). */
export function addressesOf(host: string, resolve: Resolver): Promise<Array<{ address: string; family: number }>> {
  return isLocalName(host) ? Promise.resolve([{ address: '127.0.0.1', family: 4 }]) : resolve(host);
}

/**
 * The reason `url` may not be an endpoint, or null: http(s) only, no credentials in it, and a host that
 * is not (and, by `resolve`, does not resolve to) a refused address. A name that does not resolve now
 * is accepted: it is checked again at each connection.
 */
export async function checkEndpointUrl(url: string, policy: AddressPolicy, resolve?: Resolver): Promise<string | null> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return 'is not an absolute URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return 'must be an http or https URL';
  if (u.username || u.password) return 'must not carry a user name or password';
  if (u.hash) return 'must not have a fragment';
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (isAddressLiteral(host)) return refusalOf(host, policy);
  if (!resolve && !isLocalName(host)) return null;
  let addresses: Array<{ address: string }>;
  try {
    addresses = await addressesOf(host, resolve ?? systemResolver);
  } catch {
    return null;
  }
  for (const a of addresses) {
    const why = refusalOf(a.address, policy);
    if (why) return `${host} resolves to ${why}`;
  }
  return null;
}
