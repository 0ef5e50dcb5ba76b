// The webhook operations of the admin surface (docs/webhooks.md, D-81, D-87, D-88): their rows of
// ADMIN_OPERATIONS (admin-operations.ts), with the contract's schemas of admin-webhooks.ts.
import { AdminDeletion, listOf } from './admin.ts';
import {
  CreateWebhookEndpointRequest,
  DeliveriesQuery,
  RedeliverRequest,
  UpdateWebhookEndpointRequest,
  WebhookDeliveryView,
  WebhookEndpointsQuery,
  WebhookEndpointView,
  WebhookEventView,
  WebhookListenQuery,
  WebhookListening,
  WebhookRedeliveryView,
  WebhookStreamEvent,
} from './admin-webhooks.ts';

export const WEBHOOK_RESPONSES = {
  WebhookEndpoint: WebhookEndpointView,
  WebhookEndpointList: listOf(WebhookEndpointView),
  WebhookEndpointDeletion: AdminDeletion,
  WebhookDeliveryList: listOf(WebhookDeliveryView),
  WebhookEvent: WebhookEventView,
  WebhookRedelivery: WebhookRedeliveryView,
  WebhookListening,
  WebhookStreamEvent,
} as const;
export const WEBHOOK_REQUESTS = { CreateWebhookEndpointRequest, UpdateWebhookEndpointRequest, RedeliverRequest } as const;

/** Checked as AdminOperation rows where ADMIN_OPERATIONS takes them (no import circle). */
export const WEBHOOK_OPERATIONS = [
  {
    method: 'get',
    pattern: '/webhook_events/stream',
    operationId: 'listenWebhookEvents',
    summary: "D-88 The app's events live, signed as deliveries (`parley webhooks listen`)",
    query: WebhookListenQuery,
    ok: 'WebhookStreamEvent',
    stream: { 'webhook.listening': 'WebhookListening', 'webhook.event': 'WebhookStreamEvent' },
    adminOnly: true,
    extra: ['404'],
  },
  {
    method: 'get',
    pattern: '/webhook_endpoints',
    operationId: 'listWebhookEndpoints',
    summary: "D-81 The team's webhook endpoints (of one app when asked)",
    query: WebhookEndpointsQuery,
    ok: 'WebhookEndpointList',
  },
  {
    method: 'post',
    pattern: '/webhook_endpoints',
    operationId: 'createWebhookEndpoint',
    summary: 'D-81 A new endpoint of an app; its URL checked by D-82',
    body: 'CreateWebhookEndpointRequest',
    ok: 'WebhookEndpoint',
    adminOnly: true,
    extra: ['404'],
  },
  {
    method: 'get',
    pattern: '/webhook_endpoints/:endpoint_id',
    operationId: 'getWebhookEndpoint',
    summary: 'D-81 A webhook endpoint',
    ok: 'WebhookEndpoint',
  },
  {
    method: 'post',
    pattern: '/webhook_endpoints/:endpoint_id',
    operationId: 'updateWebhookEndpoint',
    summary: 'D-81 Change an endpoint; `enabled: true` also ends a `gone` or `failing` state',
    body: 'UpdateWebhookEndpointRequest',
    ok: 'WebhookEndpoint',
    adminOnly: true,
  },
  {
    method: 'delete',
    pattern: '/webhook_endpoints/:endpoint_id',
    operationId: 'deleteWebhookEndpoint',
    summary: 'D-81 Delete an endpoint; its pending deliveries end `failed`',
    ok: 'WebhookEndpointDeletion',
    adminOnly: true,
  },
  {
    method: 'get',
    pattern: '/webhook_deliveries',
    operationId: 'listWebhookDeliveries',
    summary: 'D-87 The delivery log, newest first, each delivery with its attempts',
    query: DeliveriesQuery,
    ok: 'WebhookDeliveryList',
    extra: ['404'],
  },
  {
    method: 'get',
    pattern: '/events/:event_id',
    operationId: 'getWebhookEvent',
    summary: "D-83 An event's payload, as sent",
    ok: 'WebhookEvent',
  },
  {
    method: 'post',
    pattern: '/events/:event_id/redeliver',
    operationId: 'redeliverWebhookEvent',
    summary: 'D-87 Send an event again to its endpoints (or one), as a new series of attempts',
    body: 'RedeliverRequest',
    ok: 'WebhookRedelivery',
    adminOnly: true,
  },
] as const;
