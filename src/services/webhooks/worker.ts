// Delivering the outbox (docs/webhooks.md, D-85, D-86): at least once, each delivery leased to one
// worker at a time (PostgreSQL: FOR UPDATE SKIP LOCKED in a short transaction; no transaction held
// during the HTTP attempt), the process's slots shared fairly between teams and endpoints (D-169,
// fair-share.ts) so that a slow endpoint delays only itself, retried on the schedule, an endpoint
// disabled on 410 or after failing too long. The `webhook-id` stays; the timestamp and signatures are made for each attempt.
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { newId } from '../../core/ids.ts';
import type { WebhookEndpointT } from '../../core/webhook-endpoint.ts';
import { signedHeaders } from '../../core/webhook-signature.ts';
import type { ControlPlane } from '../../store/control.ts';
import type { Claimed, Delivery, WebhookOutbox } from '../../store/webhooks.ts';
import type { AddressPolicy, Resolver } from './addresses.ts';
import { FairShare } from './fair-share.ts';
import { Connections, type SendResult, send } from './send.ts';
import { endpointSigningKeys } from '../../core/endpoint-signing.ts';
import { disabledBySystem, disableUnsigned } from './signing-keys.ts';

/** D-85: Retry-After is honoured up to this. */
export const MAX_RETRY_AFTER_S = 86_400;
/** D-85: a lease lasts the timeout plus this: a dead instance's deliveries go to the others then. */
export const LEASE_SLACK_MS = 5_000;
/** How long a shutdown waits for the attempts under way. */
const STOP_WAIT_MS = 2_000;

export interface WorkerOptions {
  /** D-85: the delays in seconds before each retry, each from the end of the attempt before it (the first is at once). */
  scheduleS: readonly number[];
  timeoutMs: number;
  /** D-86: an endpoint failing this long (with no success since) is disabled. */
  disableAfterMs: number;
  policy: AddressPolicy;
  resolve: Resolver;
  /** Deliveries in flight at once in this process (each to a different endpoint; a team's at most half, D-169). */
  concurrency: number;
  /** How often to look for due deliveries besides the wake-ups (other instances' events, retries). */
  pollMs: number;
  /** D-87: finished events and their attempts are kept this long. */
  retentionMs: number;
  log: Logger;
  now?: () => number;
}

export class DeliveryWorker {
  private readonly owner = `w_${randomBytes(8).toString('hex')}`;
  private readonly share: FairShare;
  /** D-82: each endpoint's kept-alive connection. */
  private readonly connections = new Connections();
  /** The last headers signed (see headersOf). */
  private signed: { event: string; at: number; doc: object; key: string | null; headers: Record<string, string> } | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private again = false;
  private stopped = false;
  private lastPrune = 0;
  private readonly now: () => number;

  constructor(
    private readonly outbox: WebhookOutbox,
    private readonly control: ControlPlane,
    private readonly o: WorkerOptions,
  ) {
    this.now = o.now ?? Date.now;
    this.share = new FairShare(o.concurrency);
  }

  start(): void {
    this.outbox.onEvents(() => this.kick());
    this.schedule(0);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.kick(), ms);
    this.timer.unref();
  }

  /** Looks for due deliveries now (a new event, a redeliver, an attempt finished). */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    void this.round()
      .catch((err: Error) => this.o.log.error({ err: err.message }, 'webhook delivery round failed'))
      .finally(() => {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.kick();
        } else this.schedule(this.o.pollMs);
      });
  }

  private async round(): Promise<void> {
    const now = this.now();
    if (now - this.lastPrune > 3_600_000) {
      this.lastPrune = now;
      await this.outbox.prune(now - this.o.retentionMs);
      const ids = new Set(this.control.read().webhook_endpoints.map((e) => e.id));
      this.connections.keep(ids);
      this.share.keep(ids);
    }
    if (this.share.inFlight >= this.share.slots) return;
    // The lease outlives the attempt (bounded by its timeout) and its settling.
    const leaseMs = this.o.timeoutMs + LEASE_SLACK_MS;
    for (const c of await this.outbox.claim(this.owner, now, leaseMs, (due) => this.share.pick(due))) {
      const endpointId = c.delivery.endpoint_id;
      this.share.start(endpointId, c.event.team_id);
      let struggling: boolean | undefined;
      const p = this.deliver(c)
        .then((s) => {
          struggling = s;
        })
        .catch((err: Error) => this.o.log.error({ err: err.message, event_id: c.event.id }, 'webhook delivery failed unexpectedly'))
        .finally(() => {
          this.share.finish(endpointId, struggling);
          this.inFlight.delete(p);
          this.kick();
        });
      this.inFlight.add(p);
    }
  }

  /**
   * One attempt, recorded. Answers whether the endpoint struggles (D-169: the attempt failed, or took
   * over half its bound), or undefined when nothing was sent.
   */
  private async deliver({ delivery, event }: Claimed): Promise<boolean | undefined> {
    const endpoint = this.control.read().webhook_endpoints.find((e) => e.id === delivery.endpoint_id);
    const started = this.now();
    const attemptOf = (r: Omit<SendResult, 'retryAfterS'>) => ({
      id: newId('attempt'),
      event_id: event.id,
      endpoint_id: delivery.endpoint_id,
      created_at: Math.floor(started / 1000),
      status: r.status,
      duration_ms: r.duration_ms,
      response: r.response,
      error: r.error,
    });
    if (!endpoint) this.connections.keep(new Set(this.control.read().webhook_endpoints.map((e) => e.id)));
    if (!endpoint?.enabled) {
      // D-86: a disabled (or deleted) endpoint gets nothing; redeliver sends it later.
      const state = endpoint ? 'skipped' : 'failed';
      const why = endpoint ? 'endpoint disabled' : 'endpoint deleted';
      await this.outbox.settle(attemptOf({ status: null, response: '', error: why, duration_ms: 0 }), { ...delivery, state });
      return undefined;
    }
    const headers = this.headersOf(event, endpoint, Math.floor(started / 1000));
    if (!headers) {
      // D-150: its key no longer signs: the endpoint is disabled and says why; the event waits for redeliver.
      await this.control.apply((d) => disableUnsigned(d, endpoint.team_id, Math.floor(started / 1000)));
      this.o.log.warn({ endpoint_id: endpoint.id, reason: 'signing_key' }, 'webhook endpoint disabled');
      const error = 'endpoint disabled: its signing key no longer works';
      await this.outbox.settle(attemptOf({ status: null, response: '', error, duration_ms: 0 }), { ...delivery, state: 'skipped' });
      return undefined;
    }
    const r = await send(endpoint.url, event.body, headers, this.o, this.connections.agentFor(endpoint.id, new URL(endpoint.url)));
    const attempts = delivery.attempts + 1;
    const ok = r.status !== null && r.status >= 200 && r.status < 300;
    // D-129: a test event's duplicate is sent at once after a 2xx, with the same webhook-id.
    const sends = event.deliveries.find((d) => d.endpoint_id === delivery.endpoint_id)?.sends ?? 1;
    let next: Delivery;
    if (ok && attempts < sends) next = { ...delivery, attempts, state: 'pending', next_at: this.now() };
    else if (ok) next = { ...delivery, attempts, state: 'succeeded' };
    else if (r.status === 410 || attempts > this.o.scheduleS.length) next = { ...delivery, attempts, state: 'failed' };
    else {
      const delayS = r.retryAfterS !== null ? Math.min(r.retryAfterS, MAX_RETRY_AFTER_S) : this.o.scheduleS[attempts - 1]!;
      next = { ...delivery, attempts, state: 'pending', next_at: this.now() + delayS * 1000 };
    }
    await this.outbox.settle(attemptOf(r), next);
    const struggling = !ok || r.duration_ms > this.o.timeoutMs / 2;
    if (ok) return struggling;
    this.o.log.warn({ event_id: event.id, endpoint_id: endpoint.id, status: r.status, attempts }, 'webhook attempt failed');
    if (r.status === 410) await this.disable(endpoint, 'gone');
    else {
      const since = await this.outbox.failingSince(endpoint.id);
      if (since !== null && this.now() - since * 1000 >= this.o.disableAfterMs) await this.disable(endpoint, 'failing');
    }
    return struggling;
  }

  /**
   * D-80's headers of an attempt at `at`, signed with the endpoint's keys (D-150), or undefined when its
   * key no longer signs; the attempts to an event's endpoints of the same key in the same second share them.
   */
  private headersOf(event: Claimed['event'], endpoint: WebhookEndpointT, at: number): Record<string, string> | undefined {
    const doc = this.control.read();
    const last = this.signed;
    const key = endpoint.signing_key_id;
    if (last?.event === event.id && last.at === at && last.doc === doc && last.key === key) return last.headers;
    const keys = endpointSigningKeys(doc.keys, endpoint.team_id, key, at);
    if (keys.length === 0) return undefined;
    const headers = signedHeaders(keys, event.id, at, event.body);
    this.signed = { event: event.id, at, doc, key, headers };
    return headers;
  }

  /** D-86: disabled by the service itself, audited as such. */
  private async disable(endpoint: WebhookEndpointT, reason: 'gone' | 'failing'): Promise<void> {
    await this.control.apply((d) => {
      const e = d.webhook_endpoints.find((x) => x.id === endpoint.id);
      return e?.enabled ? [disabledBySystem(e, reason, Math.floor(this.now() / 1000))] : [];
    });
    this.o.log.warn({ endpoint_id: endpoint.id, reason }, 'webhook endpoint disabled');
  }

  /**
   * Stops claiming and waits a little for the attempts under way to be recorded; one still running
   * after that is left to its lease (a restart or another instance attempts it again: at least once).
   */
  async stop(waitMs = STOP_WAIT_MS): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    let timer: NodeJS.Timeout | undefined;
    const bound = new Promise<void>((r) => (timer = setTimeout(r, waitMs)));
    await Promise.race([Promise.all([...this.inFlight]), bound]);
    clearTimeout(timer);
    this.connections.close();
  }
}
