// The webhook outbox on PostgreSQL (docs/webhooks.md, D-84, D-85), migration 8: events written in the
// transaction of the change they report (`begin`), a delivery row per endpoint, leased to one instance
// at a time with FOR UPDATE SKIP LOCKED in a short transaction of its own (none is held during an
// attempt); a lease that runs out (its instance died) hands the delivery to another. The file twin is
// src/store/file/webhooks.ts.
import { Listeners } from '../../core/listeners.ts';
import type { Sql, TransactionSql } from 'postgres';
import type { Attempt, Claimed, Delivery, DeliveryQuery, Due, OutboxEvent, WebhookOutbox } from '../webhooks.ts';
import { PgFollows } from './webhook-follows.ts';

export const WEBHOOKS_MIGRATION = {
  version: 8,
  name: 'webhook outbox',
  sql: `
    -- D-84: events, written in the transaction of the change they report (times: created_at s, others ms).
    CREATE TABLE webhook_events (
      seq bigserial UNIQUE,
      id text PRIMARY KEY,
      team_id text NOT NULL,
      app_id text NOT NULL,
      type text NOT NULL,
      created_at bigint NOT NULL,
      body text NOT NULL,
      deliveries jsonb NOT NULL
    );
    CREATE INDEX webhook_events_team ON webhook_events (team_id, seq);
    CREATE INDEX webhook_events_created ON webhook_events (created_at);
    -- D-85: one row per (event, endpoint); a lease (owner, until) while an instance attempts it.
    CREATE TABLE webhook_deliveries (
      event_id text NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
      endpoint_id text NOT NULL,
      state text NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      next_at bigint NOT NULL,
      lease_owner text,
      lease_until bigint NOT NULL DEFAULT 0,
      PRIMARY KEY (event_id, endpoint_id)
    );
    CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_at) WHERE state = 'pending';
    CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id);
    -- D-87: each attempt.
    CREATE TABLE webhook_attempts (
      seq bigserial UNIQUE,
      id text PRIMARY KEY,
      event_id text NOT NULL,
      endpoint_id text NOT NULL,
      created_at bigint NOT NULL,
      status integer,
      duration_ms integer NOT NULL,
      response text NOT NULL,
      error text,
      FOREIGN KEY (event_id, endpoint_id) REFERENCES webhook_deliveries (event_id, endpoint_id) ON DELETE CASCADE
    );
    CREATE INDEX webhook_attempts_delivery ON webhook_attempts (event_id, endpoint_id, created_at);
    CREATE INDEX webhook_attempts_endpoint ON webhook_attempts (endpoint_id, created_at);
  `,
};

type Emit = (events: OutboxEvent[] | undefined) => Promise<void>;

interface DeliveryRow {
  event_id: string;
  endpoint_id: string;
  state: Delivery['state'];
  attempts: number;
  next_at: string;
}
const deliveryOf = (r: DeliveryRow): Delivery => ({
  event_id: r.event_id,
  endpoint_id: r.endpoint_id,
  state: r.state,
  attempts: r.attempts,
  next_at: Number(r.next_at),
});
interface EventRow {
  id: string;
  team_id: string;
  app_id: string;
  type: string;
  created_at: string;
  body: string;
  deliveries: OutboxEvent['deliveries'];
}
const eventOf = (r: EventRow): OutboxEvent => ({ ...r, created_at: Number(r.created_at) });
const attemptOf = (r: Attempt & { created_at: string | number }): Attempt => ({ ...r, created_at: Number(r.created_at) });

export class PgOutbox implements WebhookOutbox {
  private readonly listeners = new Listeners<OutboxEvent[]>();
  /** D-88: listeners' apps shared with the other instances, and their events read back from them. */
  readonly follows: PgFollows;

  constructor(
    private readonly sql: Sql,
    log?: (message: string) => void,
  ) {
    this.follows = new PgFollows(sql, (events) => this.tell(events), log);
  }

  async open(): Promise<void> {
    await this.follows.open();
  }

  /** Writes `events` in `tx`: the event rows and a delivery row per endpoint. */
  private async write(tx: Sql | TransactionSql, events: OutboxEvent[]): Promise<void> {
    this.follows.recorded(events);
    for (const ev of events) {
      await tx`INSERT INTO webhook_events (id, team_id, app_id, type, created_at, body, deliveries)
               VALUES (${ev.id}, ${ev.team_id}, ${ev.app_id}, ${ev.type}, ${ev.created_at}, ${ev.body}, ${tx.json(ev.deliveries as never)})
               ON CONFLICT (id) DO NOTHING`;
      for (const d of ev.deliveries)
        await tx`INSERT INTO webhook_deliveries (event_id, endpoint_id, state, next_at)
                 VALUES (${ev.id}, ${d.endpoint_id}, ${d.state}, ${d.due_at ?? ev.created_at * 1000}) ON CONFLICT DO NOTHING`;
    }
  }

  /**
   * A transaction whose `emit`ted events commit with it (D-84); this instance's listeners are told
   * once it has. Other instances find them by polling (PostgreSQL ≤ 18: a NOTIFY per commit is a global
   * lock): their workers the deliveries, their listeners the events (webhook-follows.ts).
   */
  async begin<T>(sql: Sql, fn: (tx: TransactionSql, emit: Emit) => Promise<T>): Promise<T> {
    const made: OutboxEvent[] = [];
    const result = (await sql.begin(async (tx) =>
      fn(tx, async (events) => {
        if (!events || events.length === 0) return;
        await this.write(tx, events);
        made.push(...events);
      }),
    )) as T;
    if (made.length > 0) this.tell(made);
    return result;
  }

  private tell(events: OutboxEvent[]): void {
    this.listeners.tell(events);
  }

  onEvents(fn: (events: OutboxEvent[]) => void): () => void {
    return this.listeners.add(fn);
  }

  async add(events: OutboxEvent[]): Promise<void> {
    if (events.length === 0) return;
    await this.sql.begin((tx) => this.write(tx, events));
    this.tell(events);
  }

  async claim(owner: string, now: number, leaseMs: number, pick: (due: Due[]) => Due[]): Promise<Claimed[]> {
    // The oldest due delivery of each endpoint, read without a lock: the lease below checks each pick again.
    const rows = await this.sql<Array<DeliveryRow & { team_id: string }>>`
      SELECT DISTINCT ON (d.endpoint_id) d.event_id, d.endpoint_id, d.state, d.attempts, d.next_at, e.team_id
      FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
      WHERE d.state = 'pending' AND d.next_at <= ${now} AND d.lease_until <= ${now}
      ORDER BY d.endpoint_id, d.next_at, e.seq`;
    const offered = new Set(rows.map((r) => `${r.event_id} ${r.endpoint_id}`));
    const picked = pick(rows.map((r) => ({ delivery: deliveryOf(r), team_id: r.team_id }))).filter((p) =>
      offered.delete(`${p.delivery.event_id} ${p.delivery.endpoint_id}`),
    );
    if (picked.length === 0) return [];
    // FOR UPDATE SKIP LOCKED in this statement's own short transaction: a pick another instance leased
    // (or is leasing) since the read is left out, never waited for.
    const leased = await this.sql<DeliveryRow[]>`
      WITH mine AS (
        SELECT event_id, endpoint_id FROM webhook_deliveries
        WHERE (event_id, endpoint_id) IN (SELECT * FROM unnest(${picked.map((p) => p.delivery.event_id)}::text[],
                                                               ${picked.map((p) => p.delivery.endpoint_id)}::text[]))
          AND state = 'pending' AND next_at <= ${now} AND lease_until <= ${now}
        FOR UPDATE SKIP LOCKED)
      UPDATE webhook_deliveries d SET lease_owner = ${owner}, lease_until = ${now + leaseMs}
      FROM mine WHERE d.event_id = mine.event_id AND d.endpoint_id = mine.endpoint_id
      RETURNING d.event_id, d.endpoint_id, d.state, d.attempts, d.next_at`;
    if (leased.length === 0) return [];
    const events = await this.sql<EventRow[]>`SELECT * FROM webhook_events WHERE id = ANY(${leased.map((d) => d.event_id)}::text[])`;
    const byId = new Map(events.map((e) => [e.id, eventOf(e)]));
    return leased.filter((d) => byId.has(d.event_id)).map((d) => ({ delivery: deliveryOf(d), event: byId.get(d.event_id)! }));
  }

  async settle(a: Attempt, next: Delivery): Promise<void> {
    await this.sql.begin(async (tx) => {
      await tx`UPDATE webhook_deliveries SET state = ${next.state}, attempts = ${next.attempts}, next_at = ${next.next_at},
               lease_owner = NULL, lease_until = 0 WHERE event_id = ${next.event_id} AND endpoint_id = ${next.endpoint_id}`;
      await tx`INSERT INTO webhook_attempts (id, event_id, endpoint_id, created_at, status, duration_ms, response, error)
               VALUES (${a.id}, ${a.event_id}, ${a.endpoint_id}, ${a.created_at}, ${a.status}, ${a.duration_ms}, ${a.response}, ${a.error})`;
    });
  }

  async redeliver(eventId: string, endpointIds: readonly string[], now: number): Promise<number> {
    const rows = await this.sql`UPDATE webhook_deliveries SET state = 'pending', next_at = ${now}, lease_owner = NULL, lease_until = 0
                                WHERE event_id = ${eventId} AND endpoint_id = ANY(${[...endpointIds]}::text[]) RETURNING 1`;
    return rows.length;
  }

  async event(id: string): Promise<OutboxEvent | undefined> {
    const [row] = await this.sql<EventRow[]>`SELECT * FROM webhook_events WHERE id = ${id}`;
    return row && eventOf(row);
  }

  /** D-156: `failed` as `failedAs` (src/store/webhooks.ts) says, in SQL. */
  async deliveries(q: DeliveryQuery) {
    const rows = await this.sql<Array<DeliveryRow & { ev: EventRow }>>`
      SELECT d.event_id, d.endpoint_id, d.state, d.attempts, d.next_at, row_to_json(e.*) AS ev
      FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
      WHERE e.team_id = ${q.team_id}
        AND (${q.endpoint_id ?? null}::text IS NULL OR d.endpoint_id = ${q.endpoint_id ?? null})
        AND (${q.event_id ?? null}::text IS NULL OR d.event_id = ${q.event_id ?? null})
        AND (${q.since ?? null}::bigint IS NULL OR e.created_at >= ${q.since ?? null})
        AND (${q.failed ?? null}::text IS NULL OR d.state = 'failed'
             OR (${q.failed ?? null} = 'or-retrying' AND d.state = 'pending' AND d.attempts > 0))
      ORDER BY e.seq DESC, d.endpoint_id LIMIT ${q.limit}`;
    const out = [];
    for (const r of rows) {
      const attempts = await this.sql<Array<Attempt & { created_at: string }>>`
        SELECT id, event_id, endpoint_id, created_at, status, duration_ms, response, error FROM webhook_attempts
        WHERE event_id = ${r.event_id} AND endpoint_id = ${r.endpoint_id} ORDER BY seq DESC`;
      out.push({ event: eventOf(r.ev), delivery: deliveryOf(r), attempts: attempts.map(attemptOf) });
    }
    return out;
  }

  async failingSince(endpointId: string): Promise<number | null> {
    const [row] = await this.sql<{ since: string | null }[]>`
      SELECT min(created_at) AS since FROM webhook_attempts
      WHERE endpoint_id = ${endpointId} AND (status IS NULL OR status < 200 OR status >= 300)
        AND seq > coalesce((SELECT max(seq) FROM webhook_attempts
                             WHERE endpoint_id = ${endpointId} AND status >= 200 AND status < 300), 0)`;
    return row?.since == null ? null : Number(row.since);
  }

  async prune(before: number): Promise<void> {
    await this.sql`DELETE FROM webhook_events e WHERE created_at < ${Math.floor(before / 1000)}
                   AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.state = 'pending')`;
  }

  async close(): Promise<void> {
    await this.follows.close();
  }
}
