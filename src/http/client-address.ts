// D-92: the address a request comes from, the one rule every per-address limit uses (the widget's
// shares, the admin surface's sign-in throttling). The socket's peer address, unless that peer is a
// proxy named by --trust-proxy: then X-Forwarded-For is believed from the right, up to the first hop
// that is not a trusted proxy (anything left of it was written by the client and proves nothing).
import { BlockList, isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';

/** The proxies whose X-Forwarded-For is believed; `none` believes no header. */
export class TrustedProxies {
  static readonly none = new TrustedProxies(null, '');

  private constructor(
    private readonly list: BlockList | null,
    /** As given, for messages. */
    readonly text: string,
  ) {}

  /**
   * `10.0.0.0/8,::1` and the like: comma-separated CIDRs or single addresses, IPv4 or IPv6. Throws an
   * Error naming the part it cannot read.
   */
  static parse(text: string): TrustedProxies {
    const list = new BlockList();
    const parts = text.split(',').map((p) => p.trim());
    for (const part of parts) {
      const m = /^([^/]+)(?:\/(\d{1,3}))?$/.exec(part);
      const family = m ? isIP(m[1]!) : 0;
      const bits = family === 4 ? 32 : 128;
      const prefix = m?.[2] === undefined ? bits : Number(m[2]);
      if (!m || family === 0 || prefix > bits)
        throw new Error(`not an address or CIDR: ${JSON.stringify(part.slice(0, 60))} (e.g. 10.0.0.0/8, 127.0.0.1 or fd00::/8)`);
      list.addSubnet(m[1]!, prefix, family === 4 ? 'ipv4' : 'ipv6');
    }
    return new TrustedProxies(list, text);
  }

  has(address: string): boolean {
    if (!this.list) return false;
    const family = isIP(address);
    return family !== 0 && this.list.check(address, family === 4 ? 'ipv4' : 'ipv6');
  }

  /** The client's address: see the head of this file. */
  clientOf(req: IncomingMessage): string {
    const peer = plain(req.socket.remoteAddress ?? '');
    if (!this.list || !this.has(peer)) return peer;
    const header = req.headers['x-forwarded-for'];
    const hops = (Array.isArray(header) ? header.join(',') : (header ?? '')).split(',');
    let client = peer;
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = plain(hops[i]!.trim());
      // A hop that is no address ends what can be believed: the proxy before it is the client.
      if (isIP(hop) === 0) break;
      client = hop;
      if (!this.has(hop)) break;
    }
    return client;
  }
}

/** An IPv4 client on a dual-stack socket is `::ffff:1.2.3.4`: the same client as `1.2.3.4`. */
function plain(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}
