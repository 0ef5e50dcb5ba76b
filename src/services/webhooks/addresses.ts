// D-82: where webhooks may be sent. A URL's host is checked when the endpoint is saved and the address
// its name resolves to again when connecting (a name can point anywhere later), so that an endpoint
// cannot make Parley reach its own network: loopback, private, link-local, metadata and the other
// special ranges are refused unless a setting allows them. Decimal, hex and octal IPv4 forms are
// normalised by the WHATWG URL parser before they get here; IPv4-mapped and NAT64 IPv6 addresses are
// judged by the IPv4 address they carry.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

export type AddressClass = 'public' | 'loopback' | 'private' | 'link-local' | 'metadata' | 'unique-local' | 'reserved';

/** Resolves a name to its addresses (tests inject one: refusals are tested without a socket). */
export type Resolver = (host: string) => Promise<Array<{ address: string; family: number }>>;

export const systemResolver: Resolver = (host) => lookup(host, { all: true, verbatim: true });

export interface AddressPolicy {
  /** Loopback allowed (D-82: by default only while Parley itself listens on loopback). */
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

/** What kind of address `ip` (an IPv4 or IPv6 literal) is. */
export function classifyAddress(ip: string): AddressClass {
  const family = isIP(ip.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
  if (family === 4) return classifyV4(ipv4Bytes(ip)!);
  const b = family === 6 ? ipv6Bytes(ip) : null;
  if (!b) return 'reserved';
  const zero = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  // ::ffff:a.b.c.d (mapped), ::a.b.c.d (compatible, deprecated) and 64:ff9b::/96 (NAT64) carry an IPv4 address.
  if (zero(0, 10) && b[10] === 0xff && b[11] === 0xff) return classifyV4(b.slice(12));
  if (b[0] === 0 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zero(4, 12)) return classifyV4(b.slice(12));
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
  const setting =
    kind === 'loopback'
      ? 'loopback is allowed while Parley listens on loopback, or with --webhook-allow-private'
      : 'allowed only with --webhook-allow-private';
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

/** Whether Parley's own listening host is loopback (D-82's default for loopback endpoints). */
export function listensOnLoopback(host: string): boolean {
  return isLocalName(host) || (isAddressLiteral(host) && classifyAddress(host) === 'loopback');
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
  if (isLocalName(host)) return refusalOf('127.0.0.1', policy) && `${host} is loopback (allowed while Parley listens on loopback)`;
  if (!resolve) return null;
  let addresses: Array<{ address: string }>;
  try {
    addresses = await resolve(host);
  } catch {
    return null;
  }
  for (const a of addresses) {
    const why = refusalOf(a.address, policy);
    if (why) return `${host} resolves to ${why}`;
  }
  return null;
}
