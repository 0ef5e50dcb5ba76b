// Starting and stopping the benchmark's servers: each runs in its own process on loopback, reports
// `{type: 'ready', ...}` over IPC, and exits when told to (or when the parent goes away).
import { fork, type ChildProcess } from 'node:child_process';
import type { Server } from 'node:http';
import path from 'node:path';
import v8 from 'node:v8';

export interface Ready {
  type: 'ready';
  port: number;
  [key: string]: unknown;
}

export interface Child {
  proc: ChildProcess;
  ready: Ready;
  /** Wall-clock milliseconds from spawn to `ready`. */
  spawnToReadyMs: number;
  /** Sends a request over IPC and waits for the reply of the same type. */
  ask<T = Record<string, unknown>>(type: string): Promise<T>;
  stop(): Promise<void>;
}

/** Parley as `npm start` runs it (bench/parley-server.ts), whatever the caller's shell exports. */
export const PARLEY_ENV = { PARLEY_MODEL: '', OLLAMA_HOST: '', LOG_LEVEL: 'info', DATABASE_URL: '', DATABASE_POOL_SIZE: '' };

const children = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});

export async function startChild(
  script: string,
  args: string[] = [],
  opts: { env?: NodeJS.ProcessEnv; execArgv?: string[]; timeoutMs?: number } = {},
): Promise<Child> {
  const started = performance.now();
  const proc = fork(path.resolve(import.meta.dirname, script), args, {
    // tsx resolved from here, so that the children start whatever the working directory.
    execArgv: ['--import', import.meta.resolve('tsx'), ...(opts.execArgv ?? [])],
    // Logs go nowhere: a pipe read by this process would tax the load generator.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    env: { ...process.env, ...opts.env },
  });
  children.add(proc);
  proc.once('exit', () => children.delete(proc));
  const ready = await new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${script} did not start within ${opts.timeoutMs ?? 60_000} ms`)),
      opts.timeoutMs ?? 60_000,
    );
    proc.on('message', function onMessage(m: Ready) {
      if (m?.type !== 'ready') return;
      clearTimeout(timer);
      proc.off('message', onMessage);
      resolve(m);
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${script} exited with code ${code} before it was ready`));
    });
  });
  const spawnToReadyMs = performance.now() - started;
  return {
    proc,
    ready,
    spawnToReadyMs,
    ask: <T>(type: string) =>
      new Promise<T>((resolve) => {
        proc.on('message', function onMessage(m: { type: string }) {
          if (m?.type !== type) return;
          proc.off('message', onMessage);
          resolve(m as T);
        });
        proc.send({ type });
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        const timer = setTimeout(() => proc.kill('SIGKILL'), 15_000);
        proc.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        proc.send({ type: 'stop' });
      }),
  };
}

/** For the child side: answers `stats` with its memory and CPU time (µs) and stops on `stop` or when the parent dies. */
export function serveIpc(stop: () => Promise<void>): void {
  process.on('message', (m: { type: string }) => {
    if (m?.type === 'stats') {
      const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
      const old = v8.getHeapSpaceStatistics().find((s) => s.space_name === 'old_space');
      const cpu = process.cpuUsage();
      process.send!({
        type: 'stats',
        rss,
        heapUsed,
        heapTotal,
        external,
        oldSpaceSize: old?.space_size,
        oldSpaceUsed: old?.space_used_size,
        cpuUs: cpu.user + cpu.system,
      });
    }
    if (m?.type === 'stop') void stop().then(() => process.exit(0));
  });
  process.on('disconnect', () => void stop().finally(() => process.exit(0)));
}

/** For a plain node:http child (baseline, fake Ollama, bare proxy): listens on loopback, says `ready`, closes on `stop`. */
export function listenAsChild(server: Server, onStop: () => void = () => {}): void {
  server.listen(0, '127.0.0.1', () => {
    serveIpc(
      () =>
        new Promise((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
          onStop();
        }),
    );
    process.send!({ type: 'ready', port: (server.address() as { port: number }).port });
  });
}
