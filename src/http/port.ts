// D-113: whether the server can listen on its address, asked before start-up creates anything.
import net from 'node:net';

/**
 * Binds `host:port` and lets it go at once: a port in use (EADDRINUSE), an address that is not this
 * machine's (EADDRNOTAVAIL) or a host that does not resolve fails here, before the data directory or
 * the database is touched. Port 0 (any free one) cannot be in use, so it is not asked.
 */
export async function checkListenable(port: number, host: string): Promise<void> {
  if (port === 0) return;
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    // No connection is accepted: the socket closes as soon as it is bound.
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve()));
  });
}
