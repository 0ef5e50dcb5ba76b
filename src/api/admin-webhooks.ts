// Webhooks on the admin surface (docs/webhooks.md, D-81, D-87, D-88): endpoints (an admin changes
// them, a viewer reads), their deliveries and attempts, an event and its redelivery, and the live
// stream `parley webhooks listen` follows.
import {
  CreateWebhookEndpointRequest,
  DeliveriesQuery,
  RedeliverRequest,
  UpdateWebhookEndpointRequest,
  WebhookEndpointsQuery,
  WebhookListenQuery,
} from '../contract/admin-webhooks.ts';
import { parseBody, parseQuery } from '../http/context.ts';
import type { RouteDef } from '../http/router.ts';
import { EventStream } from '../http/reply.ts';
import { apiError } from '../http/errors.ts';
import type { EndpointService } from '../services/webhooks/endpoints.ts';
import { liveEvents } from '../services/webhooks/listen.ts';
import type { WebhookEvents } from '../services/webhooks/events.ts';
import type { ControlPlane } from '../store/control.ts';
import type { WebhookOutbox } from '../store/webhooks.ts';
import { type AdminRoute, originOf } from './admin.ts';

/** What the live stream of D-88 reads. */
export interface ListenSource {
  outbox: WebhookOutbox;
  events: WebhookEvents;
  control: ControlPlane;
  /** Aborted when Parley starts closing: every live stream ends. */
  closing: AbortSignal;
}

function listOf<T extends { id: string }>(data: T[], has_more = false) {
  return { object: 'list', data, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null, has_more };
}

export function webhookRoutes(hooks: EndpointService, live: ListenSource): RouteDef<AdminRoute>[] {
  return [
    {
      method: 'GET',
      pattern: '/webhook_events/stream',
      route: {
        // D-88: an admin's, as creating an endpoint is (the stream carries every event's data).
        adminOnly: true,
        handle: async (ctx) => {
          const { app_id } = parseQuery(ctx, WebhookListenQuery);
          if (!live.control.read().apps.some((a) => a.id === app_id && a.team_id === ctx.admin.team_id))
            throw apiError('not_found', `App ${JSON.stringify(app_id)} not found.`, { param: 'app_id' });
          const signal = AbortSignal.any([ctx.signal, live.closing]);
          return new EventStream(liveEvents(live, ctx.admin.team_id, app_id, signal), () => ({ saved: true }));
        },
      },
    },
    {
      method: 'GET',
      pattern: '/webhook_endpoints',
      route: { handle: async (ctx) => listOf(hooks.list(ctx.admin, parseQuery(ctx, WebhookEndpointsQuery).app_id)) },
    },
    {
      method: 'POST',
      pattern: '/webhook_endpoints',
      route: {
        adminOnly: true,
        handle: async (ctx) => hooks.create(ctx.admin, await parseBody(ctx, CreateWebhookEndpointRequest), originOf(ctx)),
      },
    },
    {
      method: 'GET',
      pattern: '/webhook_endpoints/:endpoint_id',
      route: { handle: async (ctx) => hooks.get(ctx.admin, ctx.params.endpoint_id!) },
    },
    {
      method: 'POST',
      pattern: '/webhook_endpoints/:endpoint_id',
      route: {
        adminOnly: true,
        handle: async (ctx) =>
          hooks.update(ctx.admin, ctx.params.endpoint_id!, await parseBody(ctx, UpdateWebhookEndpointRequest), originOf(ctx)),
      },
    },
    {
      method: 'DELETE',
      pattern: '/webhook_endpoints/:endpoint_id',
      route: { adminOnly: true, handle: async (ctx) => hooks.delete(ctx.admin, ctx.params.endpoint_id!, originOf(ctx)) },
    },
    {
      method: 'GET',
      pattern: '/webhook_deliveries',
      route: {
        handle: async (ctx) => {
          const q = parseQuery(ctx, DeliveriesQuery);
          return listOf(await hooks.deliveries(ctx.admin, q));
        },
      },
    },
    {
      method: 'GET',
      pattern: '/events/:event_id',
      route: {
        handle: async (ctx) => {
          const ev = await hooks.event(ctx.admin, ctx.params.event_id!);
          return JSON.parse(ev.body) as unknown;
        },
      },
    },
    {
      method: 'POST',
      pattern: '/events/:event_id/redeliver',
      route: {
        adminOnly: true,
        handle: async (ctx) => {
          const body = await parseBody(ctx, RedeliverRequest);
          return hooks.redeliver(ctx.admin, ctx.params.event_id!, body.endpoint_id, originOf(ctx));
        },
      },
    },
  ];
}
