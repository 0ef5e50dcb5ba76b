// Webhooks, as Parley sends them (docs/webhooks.md, D-80…D-89): REFERENCE cases of capability
// `webhooks`, with the target's `admin`. The suite runs a receiver (conformance/receiver.ts), registers
// it as an endpoint of app_id on the admin surface, provokes events through the API and judges what
// arrives: the Standard Webhooks headers and the signature under the secret derived from api_key, the
// events and their payloads, a retry after a 500, a 410 that disables the endpoint. What the cases
// share is in webhook-support.ts; the cases that read the admin surface's answers are in webhook-reads.ts.
import { defineCases, show, type CaseDef } from '../context.ts';
import type { Exchange } from '../http.ts';
import type { Answerer } from '../receiver.ts';
import { appPath, convPath, createConversation, HOSTILE_TEXT, type Json } from './common.ts';
import {
  admin,
  checkData,
  checkEnvelope,
  checkHeaders,
  CONVERSATION_FIELDS,
  dataOf,
  delivery,
  DeliveryList,
  eventOf,
  RESPONSE_FIELDS,
  showDelivery,
  withEndpoint,
} from './webhook-support.ts';
import { WebhookEndpointView } from '../../src/contract/admin-webhooks.ts';

export const webhooks: CaseDef[] = defineCases('5.5', [
  {
    id: 'S5.5-webhook-signature',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description:
      'D-80: a delivery (conversation.created, to an endpoint the suite registers) is a POST of the event\'s JSON with webhook-id (the event\'s id), webhook-timestamp (whole seconds, now) and webhook-signature, one of whose "v1," signatures is the HMAC-SHA256 of "{id}.{timestamp}.{body}" under the secret derived from api_key; D-150: the endpoint, registered for api_key\'s key (signing_key_id, found in GET /admin/v1/keys by its listed form), shows that key, active',
    clauses: ['D-80', 'D-81', 'D-150'],
    async run(ctx) {
      await withEndpoint(ctx, 'signature', ['conversation.created'], undefined, async (h) => {
        const { conv } = await createConversation(ctx);
        checkHeaders(ctx, await delivery(ctx, h, 'conversation.created', conv.id), 'the delivery of conversation.created');
      });
    },
  },
  {
    id: 'S5.5-webhook-events',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description:
      'D-83: create, rename, send message, completion and delete each send their event (conversation.created/updated, response.completed, completion.completed, conversation.deleted) to an endpoint that asked for them: {id: the webhook-id, evt_…, object "event", type, created_at, app_id, data}, data the resource as the API answered it (deleted: true on a deletion), each signed (D-80)',
    clauses: ['D-83', 'D-80', 'D-81'],
    async run(ctx) {
      const types = ['conversation.created', 'conversation.updated', 'conversation.deleted', 'response.completed', 'completion.completed'];
      await withEndpoint(ctx, 'events', types, undefined, async (h) => {
        const since = Math.floor(Date.now() / 1000);
        const app = ctx.target.appId;
        const { ex: created, conv } = await createConversation(ctx);
        const renamed = await ctx.send({ method: 'PATCH', path: convPath(app, conv.id), body: { title: `Webhook ${HOSTILE_TEXT}` } });
        const afterRename = ctx.ok(renamed, ctx.schemas.conversation, 'rename the conversation') as Json;
        const sent = await ctx.send({
          method: 'POST',
          path: convPath(app, conv.id),
          body: { message: { content: 'Hello!' }, stream: false },
        });
        const response = ctx.ok(sent, ctx.schemas.response, 'send message') as Json;
        const completed = await ctx.send({ method: 'POST', path: appPath(app, 'completions'), body: { prompt: 'Say hello.' } });
        const completion = ctx.ok(completed, ctx.schemas.completion, 'create completion') as Json;
        const deleted = await ctx.send({ method: 'DELETE', path: convPath(app, conv.id) });
        ctx.check(deleted.status === 200, `delete conversation: expected HTTP 200, got ${deleted.status}`, deleted);
        const ids = new Set<string>();
        const judge = async (type: string, id: string, shown: Json, fields: string[], ex: Exchange, extra?: string[]) => {
          const d = await delivery(ctx, h, type, id);
          checkHeaders(ctx, d, `the delivery of ${type}`);
          const data = checkEnvelope(ctx, d, type, since);
          checkData(ctx, data, shown, fields, `the ${type} event`, ex, extra);
          ids.add(String(eventOf(d).id));
          return data;
        };
        await judge('conversation.created', conv.id, conv as Json, CONVERSATION_FIELDS, created);
        await judge('conversation.updated', conv.id, afterRename, CONVERSATION_FIELDS, renamed);
        await judge('response.completed', String(response.id), response, RESPONSE_FIELDS, sent);
        await judge('completion.completed', String(completion.id), completion, Object.keys(completion), completed);
        // The reply may have generated a title meanwhile (D-8): the rest is as the rename left it.
        const asItWas = CONVERSATION_FIELDS.filter((f) => f !== 'generated_title');
        const gone = await judge('conversation.deleted', conv.id, afterRename, asItWas, deleted, ['deleted']);
        ctx.equal(gone.deleted, true, 'the conversation.deleted event: data.deleted (D-83)', deleted);
        // D-83: one event per change. Attempts of one event share its webhook-id (D-85); another id is another event.
        for (const [type, id] of [
          ['conversation.created', conv.id],
          ['conversation.updated', conv.id],
          ['response.completed', response.id],
          ['completion.completed', completion.id],
          ['conversation.deleted', conv.id],
        ]) {
          const got = h.receiver.deliveries.filter((x) => x.path === h.path && eventOf(x).type === type && dataOf(x).id === id);
          const events = new Set(got.map((x) => x.headers['webhook-id']));
          ctx.check(
            events.size === 1,
            `one ${type} change of ${id} sent ${events.size} events (D-83: exactly one event per change): ${got.map(showDelivery).join('; ')}`,
          );
        }
        ctx.equal(ids.size, types.length, 'five events of five changes have distinct ids (D-83)');
      });
    },
  },
  {
    id: 'S5.5-webhook-event-filter',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description:
      'D-81: an endpoint that asked for conversation.deleted only gets that event of a conversation created then deleted; its delivery log (D-87) lists no conversation.created',
    clauses: ['D-81', 'D-87'],
    async run(ctx) {
      await withEndpoint(ctx, 'filter', ['conversation.deleted'], undefined, async (h) => {
        const { conv } = await createConversation(ctx);
        const deleted = await ctx.send({ method: 'DELETE', path: convPath(ctx.target.appId, conv.id) });
        ctx.check(deleted.status === 200, `delete conversation: expected HTTP 200, got ${deleted.status}`, deleted);
        await delivery(ctx, h, 'conversation.deleted', conv.id);
        const log = await admin(ctx, 'GET', `/webhook_deliveries?endpoint_id=${encodeURIComponent(h.endpoint.id)}&limit=100`);
        const list = ctx.ok(log, DeliveryList, "the endpoint's delivery log (D-87)");
        const unwanted = list.data.filter((x) => x.event_type !== 'conversation.deleted');
        ctx.check(
          unwanted.length === 0,
          `an endpoint that asked for conversation.deleted only has deliveries of ${unwanted.map((x) => x.event_type).join(', ')} (D-81)`,
          log,
        );
        const sent = h.receiver.deliveries.filter((x) => x.path === h.path && eventOf(x).type !== 'conversation.deleted');
        ctx.check(
          sent.length === 0,
          `an endpoint that asked for conversation.deleted only received ${sent.map(showDelivery).join('; ')} (D-81)`,
        );
      });
    },
  },
  {
    id: 'S5.5-webhook-retry',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description:
      "D-85: a delivery answered 500 (after the next whole second has begun) is sent again, within --settle-timeout, with the same webhook-id and event, a timestamp of its own (later than the first attempt's: the retry follows the answer) and a signature of its own that verify (D-80); the delivery log records both attempts (D-87)",
    clauses: ['D-85', 'D-80', 'D-87'],
    async run(ctx) {
      // The 500 comes once the next whole second has begun, so the retry's own time is a later second.
      const once500: Answerer = (_d, before) => (before.length === 0 ? { status: 500, afterMs: 1050 - (Date.now() % 1000) } : 200);
      await withEndpoint(ctx, 'retry', ['conversation.created'], once500, async (h) => {
        const { conv } = await createConversation(ctx);
        const first = await delivery(ctx, h, 'conversation.created', conv.id);
        checkHeaders(ctx, first, 'the first attempt');
        const id = first.headers['webhook-id']!;
        const again = await h.receiver.waitFor(
          (x) => x.path === h.path && x !== first && x.at >= first.at && (x.headers['webhook-id'] === id || dataOf(x).id === conv.id),
          ctx.settleTimeoutMs,
          ctx.signal,
        );
        if (!again)
          return ctx.fail(
            `no retry of webhook-id ${id} reached the endpoint within --settle-timeout ${ctx.settleTimeoutMs} ms after it answered 500 (D-85; D-109, extended: the implementation's first retry must come sooner than --settle-timeout — Parley's comes 5 s after the first attempt, --webhook-retry-schedule)`,
          );
        ctx.equal(again.headers['webhook-id'], id, 'the retry after a 500: webhook-id (D-85: it stays on every attempt)');
        checkHeaders(ctx, again, 'the retry');
        ctx.equal(again.json, first.json, 'the retry after a 500: the event it carries (D-85)');
        const [t1, t2] = [first, again].map((x) => Number(x.headers['webhook-timestamp']));
        ctx.check(
          t2! > t1! && again.headers['webhook-signature'] !== first.headers['webhook-signature'],
          `the retry carries webhook-timestamp ${t2} and webhook-signature ${show(again.headers['webhook-signature'])}, the first attempt ${t1} and ${show(first.headers['webhook-signature'])}: the retry was made after the first attempt's answer, a later second (D-85: the timestamp and the signatures are made for each attempt)`,
        );
        const log = await ctx.poll(
          () =>
            admin(ctx, 'GET', `/webhook_deliveries?event_id=${encodeURIComponent(id)}&endpoint_id=${encodeURIComponent(h.endpoint.id)}`),
          (ex) => ex.status === 200 && JSON.stringify(ex.json).includes('"status":200'),
        );
        const list = ctx.ok(log, DeliveryList, "the event's delivery log (D-87)");
        const statuses = list.data.flatMap((x) => x.attempt_log.map((a) => a.status));
        ctx.check(
          statuses.includes(500) && statuses.includes(200),
          `the delivery log of ${id} records attempts ${show(statuses)}, not the 500 and the 200 the receiver answered (D-87)`,
          log,
        );
      });
    },
  },
  {
    id: 'S5.5-webhook-gone',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description:
      'D-86: an endpoint that answers 410 Gone is disabled at once (enabled false, disabled_reason "gone"): the event it answered 410 to is attempted once, no more (the receiver got it once, its log shows one attempt, 410); the next event is recorded skipped for it (D-87) and not sent',
    clauses: ['D-86', 'D-87'],
    async run(ctx) {
      await withEndpoint(
        ctx,
        'gone',
        ['conversation.created'],
        () => 410,
        async (h) => {
          const { conv } = await createConversation(ctx);
          const first = await delivery(ctx, h, 'conversation.created', conv.id);
          const read = () => admin(ctx, 'GET', `/webhook_endpoints/${encodeURIComponent(h.endpoint.id)}`);
          const ex = await ctx.poll(read, (x) => (x.json as Json | undefined)?.enabled === false);
          const ep = ctx.ok(ex, WebhookEndpointView, 'read the endpoint (D-81)');
          ctx.check(
            !ep.enabled && ep.disabled_reason === 'gone',
            `after answering 410 to ${first.headers['webhook-id']}, the endpoint reads enabled ${ep.enabled}, disabled_reason ${show(ep.disabled_reason)} within --settle-timeout ${ctx.settleTimeoutMs} ms (D-86: a 410 disables it at once, "gone")`,
            ex,
          );
          const { conv: next } = await createConversation(ctx);
          const logPath = `/webhook_deliveries?endpoint_id=${encodeURIComponent(h.endpoint.id)}&limit=100`;
          const skippedOf = (x: Exchange) =>
            DeliveryList.safeParse(x.json).data?.data.find(
              (d) => d.event_id !== first.headers['webhook-id'] && d.event_type === 'conversation.created',
            );
          const log = await ctx.poll(
            () => admin(ctx, 'GET', logPath),
            (x) => skippedOf(x) !== undefined,
          );
          const later = skippedOf(log);
          ctx.check(
            later?.state === 'skipped',
            `the event after the 410 is recorded ${show(later?.state ?? 'nowhere')} for the disabled endpoint, not skipped (D-86, D-87)`,
            log,
          );
          // At once: the 410 was the event's last attempt, not the first of several that end disabled.
          const id = first.headers['webhook-id'];
          const attempts = h.receiver.deliveries.filter((x) => x.path === h.path && x.headers['webhook-id'] === id);
          const logged = DeliveryList.parse(log.json).data.find((d) => d.event_id === id);
          ctx.check(
            attempts.length === 1 && logged?.attempt_log.length === 1 && logged.attempt_log[0]!.status === 410,
            `after its first 410, ${id} was attempted again: the endpoint received it ${attempts.length} times (answered ${attempts.map((x) => x.answered).join(', ')}), its log records attempts ${show(logged?.attempt_log.map((a) => a.status))} (D-86: a 410 disables the endpoint at once)`,
            log,
          );
          const sent = h.receiver.deliveries.find((x) => x.path === h.path && dataOf(x).id === next.id);
          ctx.check(
            !sent,
            `the endpoint disabled by a 410 still received ${sent ? showDelivery(sent) : ''} (D-86: a disabled endpoint gets nothing)`,
          );
        },
      );
    },
  },
]);
