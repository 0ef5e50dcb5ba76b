// A team's webhook endpoints on the admin surface (docs/webhooks.md, D-81, D-82, D-87): created,
// changed and deleted in the control document with their audit entries; URLs checked by D-82 when
// saved; deliveries listed and redelivered from the outbox.
import { unixNow } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import type { WebhookEndpointT } from '../../core/webhook-endpoint.ts';
import { endpointSigningKeys, signingKeyState } from '../../core/endpoint-signing.ts';
import type { KeyT } from '../../core/tenants.ts';
import type { AdminCaller } from '../../core/callers.ts';
import { apiError, invalidRequest } from '../../core/api-errors.ts';
import type { ControlPlane } from '../../store/control.ts';
import type { Attempt, Delivery, OutboxEvent, WebhookOutbox } from '../../store/webhooks.ts';
import { actorOf, auditOf, type Origin } from '../admin/accounts.ts';
import { ownedBy, teamApp, teamRecord } from '../admin/team.ts';
import { type AddressPolicy, checkEndpointUrl, type Resolver } from './addresses.ts';
import { chosenSigningKey } from './signing-keys.ts';
import { type TeamCaps, checkCap } from '../admin/caps.ts';
import { type TestRequest, testEvents } from './test-events.ts';

/** The endpoint as the admin surface shows it; `keys` and `nowS` say its signing key's state (D-150). */
export function endpointView(e: WebhookEndpointT, keys: readonly KeyT[], nowS: number) {
  return {
    id: e.id,
    object: 'webhook_endpoint' as const,
    app_id: e.app_id,
    url: e.url,
    events: e.events,
    description: e.description,
    enabled: e.enabled,
    disabled_reason: e.disabled_reason,
    signing_key_id: e.signing_key_id,
    signing_key_state: signingKeyState(keys, e.team_id, e.signing_key_id, nowS),
    created_at: e.created_at,
    updated_at: e.updated_at,
  };
}

export function attemptView(a: Attempt) {
  return { object: 'webhook_attempt' as const, ...a };
}

export function deliveryView(event: OutboxEvent, d: Delivery, attempts: Attempt[]) {
  return {
    object: 'webhook_delivery' as const,
    id: `${d.event_id}/${d.endpoint_id}`,
    event_id: d.event_id,
    event_type: event.type,
    endpoint_id: d.endpoint_id,
    state: d.state,
    attempts: d.attempts,
    next_attempt_at: d.state === 'pending' ? Math.ceil(d.next_at / 1000) : null,
    created_at: event.created_at,
    last_attempt: attempts[0] ? attemptView(attempts[0]) : null,
  };
}

/** D-156: the deliveries one "redeliver every failed" call sends again at most (a list's page). */
export const REDELIVER_BATCH = 100;

export class EndpointService {
  constructor(
    private readonly control: ControlPlane,
    private readonly outbox: WebhookOutbox,
    private readonly policy: AddressPolicy,
    private readonly resolve: Resolver,
    /** D-173 */
    private readonly caps: TeamCaps,
    /** Told of a redeliver, so that the worker looks at once. */
    private readonly kick: () => void,
    /** D-169: the most endpoints an app may have (`--webhook-endpoints-per-app`). */
    private readonly perApp: number,
  ) {}

  list(c: AdminCaller, appId?: string) {
    const doc = this.control.read();
    const now = unixNow();
    return doc.webhook_endpoints
      .filter((e) => e.team_id === c.team_id && (!appId || e.app_id === appId))
      .map((e) => endpointView(e, doc.keys, now));
  }

  get(c: AdminCaller, id: string) {
    const doc = this.control.read();
    return endpointView(this.own(doc.webhook_endpoints, c, id), doc.keys, unixNow());
  }

  /** An endpoint of the caller's team, or 404 (another team's too, D-72). */
  private own(all: WebhookEndpointT[], c: AdminCaller, id: string): WebhookEndpointT {
    return teamRecord(all, c, id, { what: 'Webhook endpoint', param: 'endpoint_id' });
  }

  private async checkUrl(url: string): Promise<void> {
    const why = await checkEndpointUrl(url, this.policy, this.resolve);
    if (why) throw invalidRequest(`url ${why}.`, 'url', 'invalid_webhook_url');
  }

  async create(
    c: AdminCaller,
    req: { app_id: string; url: string; events: string[]; description?: string; signing_key_id?: string },
    origin: Origin,
  ) {
    const now = unixNow();
    teamApp(this.control.read(), c, req.app_id);
    chosenSigningKey(this.control.read(), c, req.signing_key_id, now);
    await this.checkUrl(req.url);
    const e: WebhookEndpointT = {
      id: newId('endpoint'),
      team_id: c.team_id,
      app_id: req.app_id,
      url: req.url,
      events: req.events,
      description: req.description ?? '',
      enabled: true,
      disabled_reason: null,
      signing_key_id: null,
      created_at: now,
      updated_at: now,
    };
    const doc = await this.control.apply((d) => {
      // Chosen again on the latest document: a key revoked meanwhile is refused, never registered.
      checkCap(d, this.caps, 'webhookEndpoints', c.team_id, now);
      e.signing_key_id = chosenSigningKey(d, c, req.signing_key_id, now).id;
      // D-169: counted inside the change, so that endpoints created at once cannot pass the cap together.
      if (d.webhook_endpoints.filter((x) => x.app_id === req.app_id).length >= this.perApp)
        throw apiError(
          'limit_reached',
          `App ${req.app_id} has ${this.perApp} webhook endpoints, the most an app may have (--webhook-endpoints-per-app, WEBHOOK_ENDPOINTS_PER_APP). Delete one first.`,
          { param: 'app_id' },
        );
      d.webhook_endpoints.push(e);
      const changes = { url: [null, e.url], events: [null, e.events], signing_key_id: [null, e.signing_key_id] } as Record<
        string,
        [unknown, unknown]
      >;
      return [auditOf(origin, c.team_id, 'webhook_endpoint.created', actorOf(c), { type: 'webhook_endpoint', id: e.id }, changes)];
    });
    return endpointView(e, doc.keys, now);
  }

  async update(
    c: AdminCaller,
    id: string,
    req: { url?: string; events?: string[]; description?: string; enabled?: boolean; signing_key_id?: string },
    origin: Origin,
  ) {
    const now = unixNow();
    this.own(this.control.read().webhook_endpoints, c, id);
    if (req.signing_key_id !== undefined) chosenSigningKey(this.control.read(), c, req.signing_key_id, now);
    if (req.url !== undefined) await this.checkUrl(req.url);
    const doc = await this.control.apply((d) => {
      const e = this.own(d.webhook_endpoints, c, id);
      const changes: Record<string, [unknown, unknown]> = {};
      const set = <K extends 'url' | 'events' | 'description' | 'enabled' | 'signing_key_id'>(k: K, v: WebhookEndpointT[K] | undefined) => {
        if (v === undefined || JSON.stringify(v) === JSON.stringify(e[k])) return;
        changes[k] = [e[k], v];
        e[k] = v;
      };
      set('url', req.url);
      set('events', req.events);
      set('description', req.description);
      if (req.signing_key_id !== undefined) set('signing_key_id', chosenSigningKey(d, c, req.signing_key_id, now).id);
      // D-150: a working key ends a `signing_key` disablement; enabling one whose key does not sign is refused.
      const cured = e.disabled_reason === 'signing_key' && changes.signing_key_id !== undefined && req.enabled !== false;
      set('enabled', cured ? true : req.enabled);
      if (changes.enabled && e.enabled && endpointSigningKeys(d.keys, e.team_id, e.signing_key_id, now).length === 0)
        throw invalidRequest(
          `Endpoint ${id} cannot be enabled: its signing key ${e.signing_key_id} no longer works. Name another with signing_key_id.`,
          'signing_key_id',
          'invalid_value',
        );
      if (changes.enabled) {
        changes.disabled_reason = [e.disabled_reason, e.enabled ? null : 'manual'];
        e.disabled_reason = e.enabled ? null : 'manual';
      }
      if (Object.keys(changes).length === 0) return [];
      e.updated_at = now;
      return [auditOf(origin, c.team_id, 'webhook_endpoint.updated', actorOf(c), { type: 'webhook_endpoint', id }, changes)];
    });
    return endpointView(doc.webhook_endpoints.find((e) => e.id === id)!, doc.keys, now);
  }

  async delete(c: AdminCaller, id: string, origin: Origin) {
    await this.control.apply((d) => {
      const e = this.own(d.webhook_endpoints, c, id);
      d.webhook_endpoints = d.webhook_endpoints.filter((x) => x !== e);
      return [auditOf(origin, c.team_id, 'webhook_endpoint.deleted', actorOf(c), { type: 'webhook_endpoint', id }, { url: [e.url, null] })];
    });
    return { id, object: 'webhook_endpoint' as const, deleted: true as const };
  }

  async deliveries(c: AdminCaller, q: { endpoint_id?: string; event_id?: string; limit?: number; failed?: 'true'; since?: number }) {
    if (q.endpoint_id) this.own(this.control.read().webhook_endpoints, c, q.endpoint_id);
    const rows = await this.outbox.deliveries({
      team_id: c.team_id,
      endpoint_id: q.endpoint_id,
      event_id: q.event_id,
      // D-156: the log's filter counts a delivery waiting to retry after a failure as failed.
      failed: q.failed ? 'or-retrying' : undefined,
      since: q.since,
      limit: q.limit ?? 20,
    });
    return rows.map((r) => ({ ...deliveryView(r.event, r.delivery, r.attempts), attempt_log: r.attempts.map(attemptView) }));
  }

  async event(c: AdminCaller, id: string): Promise<OutboxEvent> {
    return ownedBy(await this.outbox.event(id), c, id, { what: 'Event', param: 'event_id' });
  }

  /**
   * D-129: synthetic test events sent to the endpoint alone (whatever types it asked for; a disabled one
   * records them `skipped`, D-86), audited; the worker signs and sends them as any other.
   */
  async test(c: AdminCaller, id: string, req: TestRequest, origin: Origin) {
    const endpoint = this.own(this.control.read().webhook_endpoints, c, id);
    const now = Date.now();
    const events = testEvents(endpoint, req, now);
    await this.outbox.add(events);
    const ids = events.map((e) => e.id);
    const changes = { type: [null, req.type], events: [null, ids] } as Record<string, [unknown, unknown]>;
    await this.control.audit.append([
      auditOf(origin, c.team_id, 'webhook_endpoint.tested', actorOf(c), { type: 'webhook_endpoint', id }, changes),
    ]);
    this.kick();
    const sends = req.duplicate ? 2 : 1;
    return {
      object: 'webhook_test' as const,
      endpoint_id: id,
      type: req.type,
      event_ids: ids,
      sends,
      due_at: Math.ceil((now + (req.delay_s ?? 0) * 1000) / 1000),
    };
  }

  /** D-87: sends an event again to its endpoints (or one of them), as a new series of attempts, audited. */
  async redeliver(c: AdminCaller, eventId: string, endpointId: string | undefined, origin: Origin) {
    const ev = await this.event(c, eventId);
    const targets = ev.deliveries.map((d) => d.endpoint_id).filter((ep) => !endpointId || ep === endpointId);
    if (targets.length === 0)
      throw apiError('not_found', `Event ${eventId} has no delivery to ${JSON.stringify(endpointId)}.`, { param: 'endpoint_id' });
    const n = await this.outbox.redeliver(eventId, targets, Date.now());
    await this.control.audit.append([
      auditOf(origin, c.team_id, 'webhook_event.redelivered', actorOf(c), { type: 'event', id: eventId }, { endpoints: [null, targets] }),
    ]);
    this.kick();
    return { object: 'webhook_redelivery', event_id: eventId, endpoints: targets, deliveries: n };
  }

  /**
   * D-156: every delivery that ended `failed`, of events made at or after `since` (of one endpoint, or the
   * team's), sent again as D-87's redeliver does, each event audited; at most REDELIVER_BATCH a call, the
   * oldest last: a redelivered one is pending, so the next call goes on with the rest.
   */
  async redeliverFailed(c: AdminCaller, q: { since: number; endpoint_id?: string }, origin: Origin) {
    if (q.endpoint_id) this.own(this.control.read().webhook_endpoints, c, q.endpoint_id);
    const rows = await this.outbox.deliveries({
      team_id: c.team_id,
      endpoint_id: q.endpoint_id,
      failed: 'ended',
      since: q.since,
      limit: REDELIVER_BATCH + 1,
    });
    const byEvent = new Map<string, string[]>();
    for (const r of rows.slice(0, REDELIVER_BATCH)) byEvent.set(r.event.id, [...(byEvent.get(r.event.id) ?? []), r.delivery.endpoint_id]);
    const now = Date.now();
    let deliveries = 0;
    for (const [eventId, targets] of byEvent) deliveries += await this.outbox.redeliver(eventId, targets, now);
    await this.control.audit.append(
      [...byEvent].map(([eventId, targets]) =>
        auditOf(origin, c.team_id, 'webhook_event.redelivered', actorOf(c), { type: 'event', id: eventId }, { endpoints: [null, targets] }),
      ),
    );
    if (deliveries > 0) this.kick();
    return { object: 'webhook_redelivery_batch' as const, events: byEvent.size, deliveries, has_more: rows.length > REDELIVER_BATCH };
  }
}
