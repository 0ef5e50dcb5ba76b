// The Idempotency-Key answers on PostgreSQL (docs/postgres.md, D-42): one row per key, running (its
// instance and a lease) or done (the answer to replay), so that a key sent to several instances runs
// once and is replayed by any. Taking a key is one upsert: of concurrent requests, one inserts and the
// others find its row. A running row whose instance died stops blocking its key when its lease
// expires; the claims the work saved with itself (`idempotency_claims`) still keep it from running twice.
import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { CLAIM_TTL_MS } from '../../core/claims.ts';
import type { IdempotencyAnswers, KeptAnswer, KeyState } from '../shared.ts';

/** A running key's lease: renewed every third of it while its work runs. */
export const ANSWER_LEASE_MS = 30_000;
/** How often expired answers and claims are deleted. */
const SWEEP_MS = 3_600_000;

interface Row {
  fingerprint: string;
  at: string;
  state: 'running' | 'done';
  kind: 'json' | 'sse' | null;
  body: string | null;
  lost: boolean;
  response_id: string | null;
}

export interface PgAnswersOptions {
  /** How long a key is honoured (ms, default as the claims are kept: 24 h). */
  ttlMs?: number;
  now?: () => number;
}

export class PgIdempotencyAnswers implements IdempotencyAnswers {
  /** This instance, as the owner of the keys it runs. */
  private readonly owner = randomUUID();
  /** Keys this instance runs (their leases are renewed). */
  private readonly held = new Set<string>();
  private readonly ttl: number;
  private readonly now: () => number;
  private timers: NodeJS.Timeout[] = [];

  constructor(
    private readonly sql: Sql,
    opts: PgAnswersOptions = {},
  ) {
    this.ttl = opts.ttlMs ?? CLAIM_TTL_MS;
    this.now = opts.now ?? Date.now;
  }

  /** Deletes what expired, now and every hour, and starts renewing this instance's leases. */
  async open(): Promise<this> {
    await this.sweep();
    this.timers = [
      setInterval(() => void this.renew().catch(() => {}), ANSWER_LEASE_MS / 3),
      setInterval(() => void this.sweep().catch(() => {}), SWEEP_MS),
    ];
    for (const t of this.timers) t.unref();
    return this;
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
  }

  async begin(k: string, f: string): Promise<KeyState> {
    for (;;) {
      const now = this.now();
      // Taken if free: no row, an answer past its retention, or a run whose instance stopped renewing.
      const taken = await this.sql`
        INSERT INTO idempotency_answers (key, fingerprint, at, state, owner, lease_until)
        VALUES (${k}, ${f}, ${now}, 'running', ${this.owner}, ${now + ANSWER_LEASE_MS})
        ON CONFLICT (key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, at = EXCLUDED.at, state = 'running',
          kind = NULL, body = NULL, lost = false, owner = EXCLUDED.owner, lease_until = EXCLUDED.lease_until, response_id = NULL
        WHERE (idempotency_answers.state = 'done' AND idempotency_answers.at <= ${now - this.ttl})
           OR (idempotency_answers.state = 'running' AND idempotency_answers.lease_until < ${now})
        RETURNING key`;
      if (taken.length === 1) return this.unlessSaved(k, now);
      const [row] = await this.sql<
        Row[]
      >`SELECT fingerprint, at, state, kind, body, lost, response_id FROM idempotency_answers WHERE key = ${k}`;
      // Released between the two statements (its request was refused): take it again.
      if (!row) continue;
      if (row.state === 'running')
        return { state: 'running', f: row.fingerprint, ...(row.response_id ? { responseId: row.response_id } : {}) };
      return {
        state: 'done',
        answer: { f: row.fingerprint, at: Number(row.at), kind: row.kind ?? 'json', b: row.body, ...(row.lost ? { lost: true } : {}) },
      };
    }
  }

  /**
   * A key just taken whose work was saved already (its claim is there) by a run that never kept its
   * answer (its instance died between the two): the key is answered "lost", never run again.
   */
  private async unlessSaved(k: string, now: number): Promise<KeyState> {
    const [claim] = await this.sql<
      { fingerprint: string; at: string }[]
    >`SELECT fingerprint, at FROM idempotency_claims WHERE key = ${k} AND at > ${now - this.ttl}`;
    if (!claim) {
      this.held.add(k);
      return { state: 'new' };
    }
    const answer: KeptAnswer = { f: claim.fingerprint, at: Number(claim.at), kind: 'json', b: null, lost: true };
    await this.keep(k, answer);
    return { state: 'done', answer };
  }

  async finish(k: string, answer: KeptAnswer | undefined): Promise<void> {
    try {
      if (answer) await this.keep(k, answer);
      else await this.sql`DELETE FROM idempotency_answers WHERE key = ${k} AND owner = ${this.owner} AND state = 'running'`;
    } finally {
      this.held.delete(k);
    }
  }

  async produces(k: string, responseId: string): Promise<void> {
    await this
      .sql`UPDATE idempotency_answers SET response_id = ${responseId} WHERE key = ${k} AND owner = ${this.owner} AND state = 'running'`;
  }

  /** Replaces this instance's running row of `k` by its answer (a row another instance took over is left to it). */
  private async keep(k: string, a: KeptAnswer): Promise<void> {
    await this.sql`
      UPDATE idempotency_answers SET state = 'done', fingerprint = ${a.f}, at = ${a.at}, kind = ${a.kind}, body = ${a.b},
        lost = ${a.lost ?? false}, owner = NULL, lease_until = NULL
      WHERE key = ${k} AND owner = ${this.owner} AND state = 'running'`;
  }

  /** Extends the leases of the keys this instance runs (every third of a lease; tests call it). */
  async renew(): Promise<void> {
    if (this.held.size === 0) return;
    await this.sql`UPDATE idempotency_answers SET lease_until = ${this.now() + ANSWER_LEASE_MS}
                   WHERE key IN ${this.sql([...this.held])} AND owner = ${this.owner} AND state = 'running'`;
  }

  /** Answers and claims past the retention go (the claims' table is read no further back either). */
  async sweep(): Promise<void> {
    const now = this.now();
    await this.sql`DELETE FROM idempotency_answers WHERE at <= ${now - this.ttl} AND (state = 'done' OR lease_until < ${now})`;
    await this.sql`DELETE FROM idempotency_claims WHERE at <= ${now - this.ttl}`;
  }
}
