// The Idempotency-Key answers of one process, in the data directory (`idempotency/<hour>.jsonl`) and in
// memory: hourly journal segments, so that expiry deletes whole old segments and nothing is ever
// rewritten. PostgreSQL's twin is src/store/pg/idempotency.ts; the policy is src/pipeline/idempotency.ts.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from 'pino';
import { CLAIM_TTL_MS, type KeptClaim } from '../../core/claims.ts';
import type { IdempotencyAnswers, KeptAnswer, KeyState } from '../shared.ts';
import { Journal } from './journal.ts';

const HOUR = 3_600_000;
/**
 * Answers held in memory, all keys together. Past it the oldest answers are let go (their keys still
 * refuse to run twice: a retry gets 409 idempotency_replay_unavailable), so memory stays bounded
 * whatever a day's traffic.
 */
const REPLAY_MEMORY_BYTES = 64 * 1024 * 1024;

type Done = KeptAnswer;
type Line = Done & { k: string };

export interface FileAnswersOptions {
  /** `<data dir>/idempotency` */
  dir: string;
  /** The claims saved with work (the stores' `idempotencyClaims`): a key among them never runs again. */
  claims?: Iterable<KeptClaim>;
  /** Memory for answers (default REPLAY_MEMORY_BYTES). */
  memoryBytes?: number;
  logger?: Logger;
  now?: () => number;
}

export class FileAnswers implements IdempotencyAnswers {
  private readonly done = new Map<string, Done>();
  private readonly running = new Map<string, string>();
  private readonly now: () => number;
  private segment: { hour: number; journal: Journal } | undefined;
  private rotating: Promise<void> = Promise.resolve();
  private held = 0;

  private constructor(private readonly opts: FileAnswersOptions) {
    this.now = opts.now ?? Date.now;
  }

  static async open(opts: FileAnswersOptions): Promise<FileAnswers> {
    const svc = new FileAnswers(opts);
    await fs.mkdir(opts.dir, { recursive: true });
    const oldest = svc.hourOf(svc.now() - CLAIM_TTL_MS);
    for (const name of (await fs.readdir(opts.dir)).sort()) {
      const hour = Number(name.replace(/\.jsonl$/, ''));
      if (!/^\d+\.jsonl$/.test(name)) continue;
      const file = path.join(opts.dir, name);
      if (hour < oldest) {
        await fs.rm(file, { force: true });
        continue;
      }
      const journal = new Journal(file);
      // A damaged line in a cache of answers is not worth refusing to start for: skip it.
      await journal
        .open((e) => {
          const line = e as Line;
          if (typeof line?.k === 'string' && typeof line.f === 'string' && typeof line.at === 'number') {
            svc.remember(line.k, { f: line.f, at: line.at, kind: line.kind, b: line.b, cut: line.cut, lost: line.lost });
          }
        })
        .catch((err: Error) => opts.logger?.warn({ file, err: err.message }, 'idempotency segment unreadable; its keys are forgotten'));
      await journal.close();
    }
    // Work saved whose answer never reached its segment (a crash in between): the key is kept, with
    // no answer to replay, so a retry is told so instead of running the work again.
    for (const c of opts.claims ?? []) {
      if (c.at <= svc.now() - CLAIM_TTL_MS || svc.done.get(c.key)?.f === c.fingerprint) continue;
      const d: Done = { f: c.fingerprint, at: c.at, kind: 'json', b: null, lost: true };
      svc.remember(c.key, d);
      await svc
        .persist({ k: c.key, ...d })
        .catch((err: Error) => opts.logger?.warn({ err: err.message }, 'idempotency record not persisted'));
    }
    return svc;
  }

  /** Synchronous: the key is taken before anything awaits, so one of concurrent requests gets `new`. */
  begin(k: string, f: string): KeyState {
    const runningWith = this.running.get(k);
    if (runningWith !== undefined) return { state: 'running', f: runningWith };
    const seen = this.done.get(k);
    if (seen && seen.at > this.now() - CLAIM_TTL_MS) return { state: 'done', answer: seen };
    this.running.set(k, f);
    return { state: 'new' };
  }

  /**
   * Kept in memory at once, even if the disk then refuses (the promise rejects): the work is done
   * and durable (its claim with it), and retries in this process must not repeat it.
   */
  async finish(k: string, answer: Done | undefined): Promise<void> {
    if (this.running.get(k) === undefined) return;
    if (answer) this.remember(k, answer);
    this.running.delete(k);
    if (answer) await this.persist({ k, ...answer });
  }

  /** Keeps an answer, letting the oldest bodies go past the memory budget (their keys stay). */
  private remember(k: string, d: Done): void {
    const prev = this.done.get(k);
    if (prev?.b) this.held -= prev.b.length;
    this.done.delete(k); // re-inserted last: the map iterates oldest first
    this.done.set(k, d);
    if (d.b) this.held += d.b.length;
    const budget = this.opts.memoryBytes ?? REPLAY_MEMORY_BYTES;
    for (const old of this.done.values()) {
      if (this.held <= budget) break;
      if (old.b) {
        this.held -= old.b.length;
        old.b = null;
      }
    }
  }

  private hourOf(t: number): number {
    return Math.floor(t / HOUR);
  }

  /** Appends to the current hour's segment, opening the next and dropping expired ones as hours pass. */
  private async persist(line: Line): Promise<void> {
    const hour = this.hourOf(line.at);
    if (this.segment?.hour !== hour) {
      // A failed rotation (full disk) must not block every later one.
      this.rotating = this.rotating
        .catch(() => {})
        .then(async () => {
          if (this.segment?.hour === hour) return;
          const previous = this.segment;
          const journal = new Journal(path.join(this.opts.dir, `${hour}.jsonl`));
          await journal.open(() => {});
          this.segment = { hour, journal };
          await previous?.journal.close();
          await this.expire();
        });
    }
    await this.rotating;
    if (this.segment?.hour !== hour) throw new Error(`idempotency segment ${hour} could not be opened`);
    await this.segment.journal.append(line);
  }

  private async expire(): Promise<void> {
    const cutoff = this.now() - CLAIM_TTL_MS;
    for (const [k, d] of this.done) {
      if (d.at > cutoff) continue;
      if (d.b) this.held -= d.b.length;
      this.done.delete(k);
    }
    const oldest = this.hourOf(cutoff);
    for (const name of await fs.readdir(this.opts.dir)) {
      if (/^\d+\.jsonl$/.test(name) && Number(name.slice(0, -6)) < oldest) await fs.rm(path.join(this.opts.dir, name), { force: true });
    }
  }

  async close(): Promise<void> {
    await this.rotating.catch(() => {});
    await this.segment?.journal.close();
  }
}
