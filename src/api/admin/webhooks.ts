// Webhooks on the admin surface (docs/webhooks.md, D-81, D-87, D-88): endpoints (an admin changes
// them, a viewer reads), their deliveries and attempts, an event and its redelivery, and the live
// stream `parley webhooks listen` follows.
import type { z } from 'zod';
import { listPage } from '../../contract/admin.ts';
import {
  CreateWebhookEndpointRequest,
  DeliveriesQuery,
  RedeliverFailedRequest,
  RedeliverRequest,
  TestWebhookRequest,
  UpdateWebhookEndpointRequest,
  WebhookEndpointsQuery,
  WebhookListenQuery,
} from '../../contract/admin-webhooks.ts';
import { parseQuery } from '../../http/context.ts';
import type { RouteDef } from '../../http/router.ts';
import { type EndpointService, REDELIVER_BATCH } from '../../services/webhooks/endpoints.ts';
import { type ListenSource, listen } from '../../services/webhooks/listen.ts';
import { type AdminContext, type AdminRoute, adminWithBody } from '../rows.ts';
import { originOf } from './common.ts';

/** The webhook services the routes call: the endpoints, and the live stream's sources. */
export interface WebhookAdmin {
  endpoints: EndpointService;
  live: ListenSource;
}

/** The live stream, the endpoints, then their deliveries and events. */
export function webhookRoutes({ endpoints, live }: WebhookAdmin): RouteDef<AdminRoute>[] {
  return [
    {
      method: 'GET',
      pattern: '/webhook_events/stream',
      route: {
        operationId: 'listenWebhookEvents',
        summary: "D-88 The app's events live, signed as deliveries (`parley webhooks listen`)",
        query: WebhookListenQuery,
        ok: 'WebhookStreamEvent',
        stream: { 'webhook.listening': 'WebhookListening', 'webhook.event': 'WebhookStreamEvent' },
        // D-88: an admin's, as creating an endpoint is (the stream carries every event's data).
        adminOnly: true,
        extra: ['404'],
        handle: async (ctx) => listen(live, ctx.admin, parseQuery(ctx, WebhookListenQuery), ctx.signal),
      },
    },
    ...endpointRoutes(endpoints),
    ...deliveryRoutes(endpoints),
  ];
}

/** D-81: an admin changes the endpoints, a viewer reads them. */
function endpointRoutes(hooks: EndpointService): RouteDef<AdminRoute>[] {
  const update = async (ctx: AdminContext, body: z.output<typeof UpdateWebhookEndpointRequest>) =>
    hooks.update(ctx.admin, ctx.params.endpoint_id!, body, originOf(ctx));
  const updateSummary = 'D-81 Change an endpoint; `enabled: true` also ends a `gone` or `failing` state';
  return [
    {
      method: 'GET',
      pattern: '/webhook_endpoints',
      route: {
        operationId: 'listWebhookEndpoints',
        summary: "D-81 The team's webhook endpoints (of one app when asked)",
        query: WebhookEndpointsQuery,
        ok: 'WebhookEndpointList',
        handle: async (ctx) => listPage(hooks.list(ctx.admin, parseQuery(ctx, WebhookEndpointsQuery).app_id)),
      },
    },
    {
      method: 'POST',
      pattern: '/webhook_endpoints',
      route: adminWithBody({
        operationId: 'createWebhookEndpoint',
        summary: 'D-81 A new endpoint of an app; its URL checked by D-82; at most `--webhook-endpoints-per-app` (D-169)',
        body: CreateWebhookEndpointRequest,
        ok: 'WebhookEndpoint',
        adminOnly: true,
        extra: ['404', '409'],
        handle: async (ctx, body) => hooks.create(ctx.admin, body, originOf(ctx)),
      }),
    },
    {
      method: 'GET',
      pattern: '/webhook_endpoints/:endpoint_id',
      route: {
        operationId: 'getWebhookEndpoint',
        summary: 'D-81 A webhook endpoint',
        ok: 'WebhookEndpoint',
        handle: async (ctx) => hooks.get(ctx.admin, ctx.params.endpoint_id!),
      },
    },
    {
      method: 'PATCH',
      pattern: '/webhook_endpoints/:endpoint_id',
      route: adminWithBody({
        operationId: 'updateWebhookEndpoint',
        summary: updateSummary,
        body: UpdateWebhookEndpointRequest,
        ok: 'WebhookEndpoint',
        adminOnly: true,
        handle: update,
      }),
    },
    {
      // D-115: the update as it was first served, kept for older clients; PATCH is the update.
      method: 'POST',
      pattern: '/webhook_endpoints/:endpoint_id',
      route: adminWithBody({
        operationId: 'updateWebhookEndpointWithPost',
        summary: `${updateSummary} (deprecated alias of PATCH, D-115)`,
        body: UpdateWebhookEndpointRequest,
        ok: 'WebhookEndpoint',
        adminOnly: true,
        deprecated: true,
        handle: update,
      }),
    },
    {
      method: 'POST',
      pattern: '/webhook_endpoints/:endpoint_id/test',
      route: adminWithBody({
        operationId: 'testWebhookEndpoint',
        summary:
          'D-129 Send the endpoint a synthetic, signed test event (`"test": true`), optionally twice with one `webhook-id`, two out of order, or later',
        body: TestWebhookRequest,
        ok: 'WebhookTest',
        adminOnly: true,
        handle: async (ctx, body) => hooks.test(ctx.admin, ctx.params.endpoint_id!, body, originOf(ctx)),
      }),
    },
    {
      method: 'DELETE',
      pattern: '/webhook_endpoints/:endpoint_id',
      route: {
        operationId: 'deleteWebhookEndpoint',
        summary: 'D-81 Delete an endpoint; its pending deliveries end `failed`',
        ok: 'WebhookEndpointDeletion',
        adminOnly: true,
        handle: async (ctx) => hooks.delete(ctx.admin, ctx.params.endpoint_id!, originOf(ctx)),
      },
    },
  ];
}

/** D-87: the delivery log, an event as sent, and its redelivery. */
function deliveryRoutes(hooks: EndpointService): RouteDef<AdminRoute>[] {
  return [
    {
      method: 'GET',
      pattern: '/webhook_deliveries',
      route: {
        operationId: 'listWebhookDeliveries',
        summary:
          'D-87 The delivery log, newest first, each delivery with its attempts; D-156: `failed=true` keeps the failed ones, `since` the recent ones',
        query: DeliveriesQuery,
        ok: 'WebhookDeliveryList',
        extra: ['404'],
        handle: async (ctx) => listPage(await hooks.deliveries(ctx.admin, parseQuery(ctx, DeliveriesQuery))),
      },
    },
    {
      method: 'POST',
      pattern: '/webhook_deliveries/redeliver',
      route: adminWithBody({
        operationId: 'redeliverFailedWebhookDeliveries',
        summary: `D-156 Send again every delivery that ended failed since a time (at most ${REDELIVER_BATCH} a call; \`has_more\`: call again)`,
        body: RedeliverFailedRequest,
        ok: 'WebhookRedeliveryBatch',
        adminOnly: true,
        extra: ['404'],
        handle: async (ctx, body) => hooks.redeliverFailed(ctx.admin, body, originOf(ctx)),
      }),
    },
    {
      method: 'GET',
      pattern: '/events/:event_id',
      route: {
        operationId: 'getWebhookEvent',
        summary: "D-83 An event's payload, as sent",
        ok: 'WebhookEvent',
        handle: async (ctx) => JSON.parse((await hooks.event(ctx.admin, ctx.params.event_id!)).body) as unknown,
      },
    },
    {
      method: 'POST',
      pattern: '/events/:event_id/redeliver',
      route: adminWithBody({
        operationId: 'redeliverWebhookEvent',
        summary: 'D-87 Send an event again to its endpoints (or one), as a new series of attempts',
        body: RedeliverRequest,
        ok: 'WebhookRedelivery',
        adminOnly: true,
        handle: async (ctx, body) => hooks.redeliver(ctx.admin, ctx.params.event_id!, body.endpoint_id, originOf(ctx)),
      }),
    },
  ];
}
