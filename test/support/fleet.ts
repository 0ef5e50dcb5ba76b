// Several Parley processes on one PostgreSQL database (docs/deploy.md), and a small round-robin proxy
// in front of them, for the proofs of several instances (test/proof/pg-fleet.test.ts, pg-conformance).
// Each instance is `src/main.ts` in its own process, with its own temporary data directory, on
// 127.0.0.1 port 0; `Fleet.close()` stops them all (SIGTERM, then SIGKILL), in an after/finally hook.
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { FIXTURES_DIR, tempDir } from './helpers.ts';
import { listening } from './server-process.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** How long a SIGTERM may take before the stop becomes a SIGKILL (a shutdown has its own 15 s deadline). */
const STOP_GRACE_MS = 20_000;

export interface Instance {
  /** `http://127.0.0.1:<port>/v1`, from the banner. */
  base: string;
  /** `http://127.0.0.1:<port>`: what the proxy forwards to (the path is the client's). */
  origin: string;
  dataDir: string;
  /** Resolves with the exit code once the process is gone (reaped: its pid may be reused after). */
  exited: Promise<number | null>;
  /** True once the process has exited. */
  readonly dead: boolean;
  stderr(): string;
  /** `kill -9`; resolves once the process has exited. */
  kill(): Promise<void>;
  /** SIGTERM (a graceful shutdown), SIGKILL if it has not exited within STOP_GRACE_MS. */
  stop(): Promise<void>;
}

export interface FleetOptions {
  databaseUrl: string;
  fixturesDir?: string;
  /** Extra environment of every instance. */
  env?: Record<string, string>;
}

/**
 * The environment of an instance: none of the caller's PARLEY_* settings (a PARLEY_MODEL or
 * PARLEY_WIDGET_SECRET would change what is proven) nor DATABASE_URL (the flag names the database);
 * no coverage (measured in-process by npm test; a child writing its own costs CPU and adds nothing).
 */
function ownEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PARLEY_') && k !== 'DATABASE_URL') env[k] = v;
  return { ...env, NODE_V8_COVERAGE: '' };
}

/** Starts one instance on the database; rejects (with its stderr) if it exits before listening. */
export async function startInstance(opts: FleetOptions): Promise<Instance> {
  const dataDir = await tempDir('parley-fleet-');
  const child: ChildProcess = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/main.ts',
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      '--fixtures',
      opts.fixturesDir ?? FIXTURES_DIR,
      '--log-level',
      'warn',
      '--data-dir',
      dataDir,
      '--database-url',
      opts.databaseUrl,
    ],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...ownEnv(), ...opts.env } },
  );
  const l = listening(child);
  let dead = false;
  void l.exited.then(() => (dead = true));
  // The signal goes only to a child not yet reaped: after 'exit' its pid may belong to another process.
  const signal = (s: NodeJS.Signals) => {
    if (!dead && child.exitCode === null && child.signalCode === null) child.kill(s);
  };
  let base: string;
  try {
    base = await l.base;
  } catch (err) {
    signal('SIGKILL');
    await l.exited;
    throw err;
  }
  return {
    base,
    origin: new URL(base).origin,
    dataDir,
    exited: l.exited,
    get dead() {
      return dead;
    },
    stderr: l.stderr,
    async kill() {
      signal('SIGKILL');
      await l.exited;
    },
    async stop() {
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), STOP_GRACE_MS);
      try {
        await l.exited;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

export interface Fleet {
  instances: Instance[];
  /** Stops every instance still running (an instance that fails to stop does not keep the others up). */
  close(): Promise<void>;
}

/**
 * N instances on one database, started at once (so their start-up migrations race, D-41). If one fails
 * to start, the others are stopped and the error is thrown.
 */
export async function startFleet(n: number, opts: FleetOptions): Promise<Fleet> {
  const started = await Promise.allSettled(Array.from({ length: n }, () => startInstance(opts)));
  const instances = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const close = async () => {
    await Promise.allSettled(instances.map((i) => i.stop()));
  };
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) {
    await close();
    throw failed.reason;
  }
  return { instances, close };
}

export interface ReverseProxy {
  /** `http://127.0.0.1:<port>/v1`. */
  base: string;
  /** Requests forwarded to each origin so far. */
  served: Map<string, number>;
  /** Takes an origin out of the rotation (a load balancer's failed health check). */
  drop(origin: string): void;
  close(): Promise<void>;
}

// Per connection, not end to end (RFC 9110 §7.6.1): never forwarded.
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'host']);

function forwardable(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP_BY_HOP.has(k)) out[k] = v;
  return out;
}

/**
 * A round-robin reverse proxy over `origins`, as a load balancer would be: each request goes to the
 * next origin in the rotation; a response is streamed back as it arrives (SSE unbuffered). An origin
 * that refuses the connection is dropped and the request goes to the next one (nothing reached the
 * refusing one, so this is safe for any method); a connection lost after the request was sent is a 502,
 * since the request may have run.
 */
export async function startProxy(origins: string[]): Promise<ReverseProxy> {
  const live = [...origins];
  const served = new Map(origins.map((o) => [o, 0]));
  const agent = new http.Agent({ keepAlive: true });
  let next = 0;
  const pick = (): string | undefined => (live.length === 0 ? undefined : live[next++ % live.length]);
  const drop = (origin: string) => {
    const i = live.indexOf(origin);
    if (i >= 0) live.splice(i, 1);
  };

  const server = http.createServer(async (req, res) => {
    // Buffered (requests are small JSON) so that a refused connection can be retried elsewhere.
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks);
    const attempt = (): void => {
      const origin = pick();
      if (!origin) {
        res.writeHead(502, { 'content-type': 'text/plain' }).end('no instance left\n');
        return;
      }
      served.set(origin, served.get(origin)! + 1);
      const up = http.request(new URL(req.url!, origin), { method: req.method, headers: forwardable(req.headers), agent });
      up.on('response', (upRes) => {
        res.writeHead(upRes.statusCode!, upRes.statusMessage, forwardable(upRes.headers));
        res.flushHeaders();
        upRes.pipe(res);
        // The instance died mid-response: the client sees its connection cut, as behind a real balancer.
        upRes.on('close', () => {
          if (!upRes.complete) res.destroy();
        });
      });
      up.on('error', (err: NodeJS.ErrnoException) => {
        if (res.headersSent) return res.destroy();
        if (err.code === 'ECONNREFUSED') {
          drop(origin);
          return attempt();
        }
        res.writeHead(502, { 'content-type': 'text/plain' }).end(`upstream ${err.code ?? 'error'}\n`);
      });
      // The client went away: so does the upstream request (a client abort must reach the instance).
      res.on('close', () => {
        if (!res.writableFinished) up.destroy();
      });
      up.end(body);
    };
    attempt();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    base: `http://127.0.0.1:${port}/v1`,
    served,
    drop,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
