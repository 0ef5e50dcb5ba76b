// The webhook outbox (docs/webhooks.md, D-84…D-87): events written in the same atomic step as the change
// they report, each with a delivery per endpoint subscribed when it happened, and every attempt made.
// Backends side by side: src/store/file/webhooks.ts (a journal) and src/store/pg/webhooks.ts (tables);
// the policy (schedule, leases, what an answer means) is src/services/webhooks/worker.ts's.

/** An event as recorded: its payload is the exact body every attempt sends. */
export interface OutboxEvent {
  id: string;
  team_id: string;
  app_id: string;
  type: string;
  /** Unix seconds. */
  created_at: number;
  /** The compact JSON payload (D-83). */
  body: string;
  /**
   * The endpoints subscribed when it happened: `pending`, or `skipped` for a disabled one (D-86). A test
   * event's (D-129) may be due later than it was made (`due_at`, ms) and sent again at once after each
   * 2xx until it has had `sends` attempts.
   */
  deliveries: Array<{ endpoint_id: string; state: 'pending' | 'skipped'; due_at?: number; sends?: number }>;
}

export type DeliveryState = 'pending' | 'succeeded' | 'failed' | 'skipped';

export interface Delivery {
  event_id: string;
  endpoint_id: string;
  state: DeliveryState;
  attempts: number;
  /** Milliseconds: when the next attempt is due (pending only). */
  next_at: number;
}

export interface Attempt {
  id: string;
  event_id: string;
  endpoint_id: string;
  /** Unix seconds. */
  created_at: number;
  status: number | null;
  duration_ms: number;
  response: string;
  error: string | null;
}

/** A delivery leased to one worker, with its event. */
export interface Claimed {
  delivery: Delivery;
  event: OutboxEvent;
}

/** A due delivery a claim offers the worker's policy: the oldest of its endpoint, and whose team's it is. */
export interface Due {
  delivery: Delivery;
  team_id: string;
}

export interface DeliveryQuery {
  team_id: string;
  endpoint_id?: string;
  event_id?: string;
  /** D-156: only deliveries that failed (see `failedAs`). */
  failed?: FailedFilter;
  /** D-156: only events made at or after this (Unix seconds). */
  since?: number;
  limit: number;
}

/**
 * D-156: what a failed delivery is. `ended`: it ended `failed` (what "redeliver every failed" sends again);
 * `or-retrying`: that, or `pending` after a failed attempt, waiting for its retry (the delivery log's filter).
 */
export type FailedFilter = 'ended' | 'or-retrying';

/** D-156: whether a delivery is failed as `filter` says (PostgreSQL's twin is its `deliveries` query). */
export function failedAs(d: Pick<Delivery, 'state' | 'attempts'>, filter: FailedFilter): boolean {
  return d.state === 'failed' || (filter === 'or-retrying' && d.state === 'pending' && d.attempts > 0);
}

/** D-88: the apps live listeners follow; their events are made even with no endpoint (D-83). */
export interface AppFollows {
  /** A listener here follows `appId` until the returned function is called. */
  follow(appId: string): () => void;
  /** Whether a listener follows `appId`: here, or (PostgreSQL) on another instance. */
  has(appId: string): boolean;
}

/**
 * The followers of one process, counted per app; a release counts once. The file store's directory has
 * one; PostgreSQL's PgFollows (pg/webhook-follows.ts) counts its own listeners with one and hears of an
 * app's first listener and of its last through `edges`, to tell the other instances.
 */
export class LocalFollows implements AppFollows {
  private readonly counts = new Map<string, number>();

  constructor(private readonly edges: { first?(appId: string): void; last?(appId: string): void } = {}) {}

  follow(appId: string): () => void {
    const n = this.counts.get(appId) ?? 0;
    this.counts.set(appId, n + 1);
    if (n === 0) this.edges.first?.(appId);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const left = (this.counts.get(appId) ?? 1) - 1;
      if (left > 0) {
        this.counts.set(appId, left);
        return;
      }
      this.counts.delete(appId);
      this.edges.last?.(appId);
    };
  }

  has(appId: string): boolean {
    return this.counts.has(appId);
  }

  /** The apps followed here. */
  apps(): string[] {
    return [...this.counts.keys()];
  }

  get size(): number {
    return this.counts.size;
  }
}

export interface WebhookOutbox {
  /** D-88: the apps live listeners follow, and (PostgreSQL) the events other instances record for them reach `onEvents`. */
  readonly follows: AppFollows;
  /** Records events made outside a store change (completions, tests); durable when it resolves. */
  add(events: OutboxEvent[]): Promise<void>;
  /**
   * Offers `pick` the oldest due delivery (pending, next_at ≤ now, no live lease) of each endpoint that
   * has one, and leases those it picks to `owner` until now + leaseMs (D-169: the worker's policy
   * chooses, fairly, src/services/webhooks/fair-share.ts); each delivery is leased to one worker at a
   * time, so a pick another worker leased meanwhile is left out of the answer.
   */
  claim(owner: string, now: number, leaseMs: number, pick: (due: Due[]) => Due[]): Promise<Claimed[]>;
  /** Records an attempt and the delivery's next state (and releases its lease). */
  settle(attempt: Attempt, next: Delivery): Promise<void>;
  /** Puts deliveries of an event back to pending, due now (D-87's redeliver); the number changed. */
  redeliver(eventId: string, endpointIds: readonly string[], now: number): Promise<number>;
  event(id: string): Promise<OutboxEvent | undefined>;
  /** Newest events first, with each delivery's attempts, newest first. */
  deliveries(q: DeliveryQuery): Promise<Array<{ event: OutboxEvent; delivery: Delivery; attempts: Attempt[] }>>;
  /** Unix seconds of the earliest failed attempt since the endpoint's last success, or null (D-86). */
  failingSince(endpointId: string): Promise<number | null>;
  /** Forgets events and attempts older than `before` (ms) whose deliveries are all finished (D-87). */
  prune(before: number): Promise<void>;
  /**
   * Told (in this process) of events recorded here, once durable, and (PostgreSQL) of those another
   * instance recorded for an app a listener here follows: the worker and live listeners; returns the way to stop.
   */
  onEvents(fn: (events: OutboxEvent[]) => void): () => void;
  close(): Promise<void>;
}
