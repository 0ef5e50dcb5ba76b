// D-166: password hashing apart from the data plane. scrypt's asynchronous form runs on libuv's thread
// pool (4 threads by default), the pool the file store's reads and writes wait for: a burst of sign-ins
// holding every thread stalls /v1. Every hash of the process goes instead through one bounded pool of
// worker threads, each at the lowest CPU priority, so that the data plane's I/O keeps libuv's threads
// and its CPU goes first; a verification finding the queue full is answered 503 `sign_in_busy` at once
// rather than waiting behind a burst.
import type { ScryptOptions } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { apiError } from '../../core/api-errors.ts';
import { type Derive, hashPassword, verifyNobody, verifyPassword } from './passwords.ts';

/** Hashes running at once, each on a worker thread of its own. */
export const HASH_POOL_SIZE = 1;
/** Verifications waiting for the pool (a few seconds of work at the production cost) before 503. */
export const HASH_QUEUE_BOUND = 16;

/**
 * A worker's code, CommonJS evaluated as a string: it needs no loader and no file beside the bundle.
 * Linux keeps a nice value per thread, so setPriority(19) slows this thread only, never the server's.
 */
const WORKER_CODE = `
const { parentPort } = require('node:worker_threads');
const { scryptSync } = require('node:crypto');
try { require('node:os').setPriority(19); } catch {}
parentPort.on('message', (m) => {
  try { parentPort.postMessage({ id: m.id, key: scryptSync(m.password, m.salt, m.keyBytes, m.options) }); }
  catch (e) { parentPort.postMessage({ id: m.id, error: String(e && e.message) }); }
});`;

/** One worker thread running scrypt; started on first use, and keeping the process alive only while it works. */
class HashWorker {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, { resolve: (key: Buffer) => void; reject: (err: Error) => void }>();
  private nextId = 0;

  /** Hashes asked of this worker and not answered yet. */
  get load(): number {
    return this.pending.size;
  }

  readonly derive: Derive = (password, salt, keyBytes, options) =>
    new Promise((resolve, reject) => {
      const id = this.nextId++;
      this.pending.set(id, { resolve, reject });
      const w = this.started();
      if (this.pending.size === 1) w.ref();
      w.postMessage({ id, password, salt, keyBytes, options: { ...options } satisfies ScryptOptions });
    });

  private started(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(WORKER_CODE, { eval: true });
    w.on('message', (m: { id: number; key?: Uint8Array; error?: string }) => {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (this.pending.size === 0) w.unref();
      if (m.key) p?.resolve(Buffer.from(m.key.buffer, m.key.byteOffset, m.key.byteLength));
      else p?.reject(new Error(m.error ?? 'scrypt failed'));
    });
    // A worker that dies fails what it held; the next hash starts another.
    const fail = (err: Error) => {
      if (this.worker === w) this.worker = undefined;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`the hashing worker exited (${code})`)));
    this.worker = w;
    return w;
  }
}

export class HashPool {
  private running = 0;
  private readonly workers: HashWorker[];
  private readonly waiting: (() => void)[] = [];
  /** The most tasks seen running at once (a test's seam: never above `size`). */
  peak = 0;
  /** Passwords checked (verifications started), a test's seam for D-165. */
  checked = 0;

  constructor(
    readonly size: number,
    readonly queueBound: number,
  ) {
    this.workers = Array.from({ length: size }, () => new HashWorker());
  }

  /** The scrypt of the least busy worker (the pool runs at most `size` tasks: one is idle). */
  private readonly derive: Derive = (...args) => this.workers.reduce((a, b) => (b.load < a.load ? b : a)).derive(...args);

  /**
   * Runs `task` once a slot is free. A `bounded` task (a verification an unauthenticated request asks
   * for) finding `queueBound` tasks waiting is refused with `sign_in_busy`; an authorised caller's new
   * hash waits its turn.
   */
  async run<T>(task: () => Promise<T>, bounded: boolean): Promise<T> {
    if (this.running >= this.size) {
      if (bounded && this.waiting.length >= this.queueBound)
        throw apiError('sign_in_busy', 'Too many sign-ins are being checked at once: try again in a second.');
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else this.running++;
    this.peak = Math.max(this.peak, this.running);
    try {
      return await task();
    } finally {
      // The slot passes straight to the next waiter, so `running` never drops below what holds it.
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }

  /** D-66: whether `password` is `stored`'s (null: an unknown email, checked at `nobodyCost` for the same time). */
  verify(password: string, stored: string | null, nobodyCost: number): Promise<boolean> {
    return this.run(() => {
      this.checked++;
      return stored === null ? verifyNobody(password, nobodyCost, this.derive) : verifyPassword(password, stored, this.derive);
    }, true);
  }

  /** D-66: a new hash of `password` at `cost`. */
  hash(password: string, cost: number): Promise<string> {
    return this.run(() => hashPassword(password, cost, this.derive), false);
  }
}

/** The process's pool: libuv's thread pool is one per process, so is the share hashing may hold of it. */
export const hashPool = new HashPool(HASH_POOL_SIZE, HASH_QUEUE_BOUND);
