// Webhook and admin cases that read every field the docs promise (docs/webhooks.md, docs/control-plane.md):
// an endpoint as read back and after its deletion (D-81), the delivery log in order with each attempt's
// status, answer, duration and time (D-87), a sign-in, its cookie and a sign-out (D-67), and a completion
// whose client left, seen stopped by its event (D-19, D-83). REFERENCE cases of capability `webhooks`.
import { z } from 'zod';
import { WebhookEndpointView } from '../../src/contract/admin-webhooks.ts';
import { defineCases, show, type CaseDef } from '../context.ts';
import type { Answerer } from '../receiver.ts';
import { appPath, createConversation, type Json } from './common.ts';
import {
  admin,
  checkEndpoint,
  dataOf,
  delivery,
  deleteEndpoint,
  DeliveryList,
  eventOf,
  hideSecrets,
  registerEndpoint,
  showDelivery,
  signIn,
  withEndpoint,
} from './webhook-support.ts';

const EndpointList = z.object({ data: z.array(WebhookEndpointView) });
const endpointPath = (id: string) => `/webhook_endpoints/${encodeURIComponent(id)}`;

/** An answer longer than the 1,024 bytes the log keeps (D-87), each position told apart by its digits. */
const LONG_ANSWER = Array.from({ length: 400 }, (_, i) => String(i).padStart(5, '0')).join('');
/** How long the receiver takes over a 200 in the log case: the attempt's duration is at least this. */
const ANSWER_AFTER_MS = 300;

const SignedIn = z.looseObject({
  member: z.looseObject({ id: z.string().min(1), object: z.literal('member'), email: z.string() }),
  team: z.looseObject({ id: z.string().min(1) }),
  csrf_token: z.string().min(1),
});

export const webhookReads: CaseDef[] = defineCases('5.5', [
  {
    id: 'S5.5-webhook-endpoint-read',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description:
      "D-81: every field of a new endpoint's answer is what was sent (app_id, url, events, description, signing_key_id) or its default (object webhook_endpoint, enabled, disabled_reason null, signing_key_state active, times of the change); GET and the app's list show it the same; PATCH {events} changes the events and nothing else (D-115)",
    clauses: ['D-81', 'D-115', 'D-150'],
    async run(ctx) {
      const made = await registerEndpoint(ctx, 'read', ['conversation.created', 'conversation.deleted']);
      const id = made.endpoint.id;
      const got = await admin(ctx, 'GET', endpointPath(id));
      ctx.equal(
        ctx.ok(got, WebhookEndpointView, 'read the endpoint (D-81)'),
        made.endpoint,
        'the endpoint read back, compared with its registration',
        got,
      );
      const listed = await admin(ctx, 'GET', `/webhook_endpoints?app_id=${encodeURIComponent(made.sent.app_id)}`);
      const inList = ctx.ok(listed, EndpointList, "list the app's endpoints (D-81)").data.find((e) => e.id === id);
      ctx.equal(inList, made.endpoint, "the endpoint in its app's list, compared with its registration", listed);
      const since = Math.floor(Date.now() / 1000);
      const events = ['conversation.updated'];
      const patched = await admin(ctx, 'PATCH', endpointPath(id), { events });
      const after = ctx.ok(patched, WebhookEndpointView, 'change the endpoint with PATCH (D-115)');
      checkEndpoint(ctx, after, { ...made.sent, events }, made.endpoint.created_at, 'the answer of PATCH {events}', patched);
      ctx.check(
        after.updated_at >= since - 2,
        `PATCH answered updated_at ${after.updated_at}, before the change (${since}, D-81)`,
        patched,
      );
      await deleteEndpoint(ctx, id);
    },
  },
  {
    id: 'S5.5-webhook-endpoint-deleted',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description:
      "D-81: a deleted endpoint is 404 when read, is no longer in its app's list and receives nothing more: of a conversation created after its deletion, another endpoint of the same event type gets the event, and once none of the event's deliveries is pending (D-87) the deleted one has received nothing and has no delivery of it",
    clauses: ['D-81'],
    async run(ctx) {
      const kept = await registerEndpoint(ctx, 'deleted-kept', ['conversation.created']);
      const gone = await registerEndpoint(ctx, 'deleted', ['conversation.created']);
      await deleteEndpoint(ctx, gone.endpoint.id);
      ctx.error(await admin(ctx, 'GET', endpointPath(gone.endpoint.id)), 'read a deleted endpoint (D-81)', { status: 404 });
      const listed = await admin(ctx, 'GET', `/webhook_endpoints?app_id=${encodeURIComponent(gone.sent.app_id)}`);
      const still = ctx.ok(listed, EndpointList, "list the app's endpoints (D-81)").data.find((e) => e.id === gone.endpoint.id);
      ctx.check(!still, `the deleted endpoint is still in its app's list: ${show(still)} (D-81)`, listed);
      // The kept endpoint's delivery names the event; once none of its deliveries is pending, what went out has arrived.
      const { conv } = await createConversation(ctx);
      const event = (await delivery(ctx, kept, 'conversation.created', conv.id)).headers['webhook-id']!;
      const log = await ctx.poll(
        () => admin(ctx, 'GET', `/webhook_deliveries?event_id=${encodeURIComponent(event)}`),
        (x) => DeliveryList.safeParse(x.json).data?.data.every((d) => d.state !== 'pending') ?? false,
      );
      const sent = kept.receiver.deliveries.filter((x) => x.path === gone.path);
      ctx.check(
        sent.length === 0,
        `the deleted endpoint received ${sent.map(showDelivery).join('; ')} (D-81: a deleted endpoint gets nothing)`,
      );
      const logged = ctx.ok(log, DeliveryList, "the event's delivery log (D-87)").data.filter((d) => d.endpoint_id === gone.endpoint.id);
      ctx.check(
        logged.length === 0,
        `the deleted endpoint has deliveries of ${event}: ${show(logged)} (D-81: a deleted endpoint gets nothing)`,
        log,
      );
      await deleteEndpoint(ctx, kept.endpoint.id);
    },
  },
  {
    id: 'S5.5-webhook-log',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description: `D-87: the delivery log lists an endpoint's deliveries newest first, each with its attempts newest first; an attempt the receiver hung up on has status null and an error; one it answered 200 (after ${ANSWER_AFTER_MS} ms, with a body of 2,000 bytes) has status 200, the body's first 1,024 bytes, a duration of at least ${ANSWER_AFTER_MS} ms, and the Unix time it was made`,
    clauses: ['D-87', 'D-85'],
    async run(ctx) {
      // The first attempt gets no answer at all; every other one a 200 with a long body, after a while.
      const answer: Answerer = (_d, before) =>
        before.length === 0 ? 'hang-up' : { status: 200, body: LONG_ANSWER, afterMs: ANSWER_AFTER_MS };
      await withEndpoint(ctx, 'log', ['conversation.created'], answer, async (h) => {
        const since = Math.floor(Date.now() / 1000);
        const { conv: older } = await createConversation(ctx);
        const first = await delivery(ctx, h, 'conversation.created', older.id);
        const id = first.headers['webhook-id'];
        const answered = (x: { path: string; headers: Record<string, string>; answered: number | null }) =>
          x.path === h.path && x.headers['webhook-id'] === id && x.answered === 200;
        if (!(await h.receiver.waitFor(answered, ctx.settleTimeoutMs, ctx.signal)))
          ctx.fail(
            `no retry of ${id} reached the endpoint within --settle-timeout ${ctx.settleTimeoutMs} ms after it got no answer (D-85)`,
          );
        const { conv: newer } = await createConversation(ctx);
        await delivery(ctx, h, 'conversation.created', newer.id);
        const logPath = `/webhook_deliveries?endpoint_id=${encodeURIComponent(h.endpoint.id)}&limit=100`;
        const log = await ctx.poll(
          () => admin(ctx, 'GET', logPath),
          (x) => (DeliveryList.safeParse(x.json).data?.data.filter((d) => d.state === 'succeeded').length ?? 0) >= 2,
        );
        const list = ctx.ok(log, DeliveryList, "the endpoint's delivery log (D-87)").data;
        const ids = list.map((d) => d.event_id);
        const newerId = list.find((d) => d.event_id !== id)?.event_id;
        ctx.check(
          newerId !== undefined && ids.indexOf(newerId) < ids.indexOf(id!),
          `the delivery log lists ${show(ids)}: ${id} (the older event) before ${newerId} (D-87: newest first)`,
          log,
        );
        const d = list.find((x) => x.event_id === id)!;
        const statuses = d.attempt_log.map((a) => a.status);
        ctx.equal(statuses, [200, null], `the attempts of ${id}, newest first: the 200, then the attempt that got no answer (D-87)`, log);
        ctx.equal(d.attempts, 2, `the delivery of ${id}: attempts (D-87)`, log);
        ctx.equal(d.last_attempt, d.attempt_log[0], `the delivery of ${id}: last_attempt is the newest of its attempts (D-87)`, log);
        const [ok, none] = [d.attempt_log[0]!, d.attempt_log[1]!];
        ctx.equal(ok.response, LONG_ANSWER.slice(0, 1024), "the 200's response: the first 1,024 bytes of the answer (D-87)", log);
        ctx.check(
          typeof none.error === 'string' && none.error !== '',
          `the attempt that got no answer records error ${show(none.error)} (D-87: status null and the error)`,
          log,
        );
        const elapsed = Date.now() - since * 1000;
        ctx.check(
          ok.duration_ms >= ANSWER_AFTER_MS && ok.duration_ms <= elapsed,
          `the 200 answered after ${ANSWER_AFTER_MS} ms records duration_ms ${ok.duration_ms} (D-87: the attempt's duration in milliseconds)`,
          log,
        );
        const now = Math.ceil(Date.now() / 1000);
        for (const a of [ok, none])
          ctx.check(
            a.created_at >= since - 2 && a.created_at <= now + 2,
            `an attempt of ${id} records created_at ${a.created_at}, not the Unix time it was made in seconds (between ${since} and ${now}, D-87)`,
            log,
          );
        ctx.check(
          ok.created_at >= none.created_at,
          `the retry of ${id} is recorded at ${ok.created_at}, before the attempt it followed (${none.created_at}, D-87)`,
          log,
        );
      });
    },
  },
  {
    id: 'S5.5-admin-session',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin'],
    description:
      'D-67: a sign-in answers the member (the admin, by email), the team and a CSRF token, and sets parley_session HttpOnly, SameSite=Strict, Path=/ (Secure where the admin surface is https); the session reads GET /session; after DELETE /sessions/current (200) that session is refused (401)',
    clauses: ['D-67'],
    async run(ctx) {
      const a = ctx.target.admin!;
      const { ex, setCookie } = await signIn(ctx);
      const body = ctx.ok(ex, SignedIn, `sign-in of the target's admin ${a.email} (D-67: the member, the team and the CSRF token)`);
      ctx.equal(body.member.email.toLowerCase(), a.email.toLowerCase(), 'the member the sign-in answers: email (D-67)', ex);
      if (!setCookie) return ctx.fail('the sign-in set no parley_session cookie (D-67)', ex);
      const attrs = setCookie
        .split(';')
        .slice(1)
        .map((s) => s.trim().toLowerCase());
      const want = ['httponly', 'samesite=strict', 'path=/', ...(new URL(a.baseUrl).protocol === 'https:' ? ['secure'] : [])];
      const missing = want.filter((w) => !attrs.includes(w));
      ctx.check(
        missing.length === 0,
        `the session cookie lacks ${missing.join(', ')}: its attributes are ${show(attrs)} (D-67: HttpOnly; SameSite=Strict; Path=/, Secure over TLS)`,
        ex,
      );
      const headers = { cookie: setCookie.split(';')[0]!, 'x-csrf-token': body.csrf_token };
      const call = (method: string, path: string) => ctx.send({ method, path, baseUrl: a.baseUrl, key: null, headers }, hideSecrets);
      const read = await call('GET', '/session');
      const session = ctx.ok(read, SignedIn, 'read the session (D-67)');
      ctx.equal(
        [session.member.id, session.team.id],
        [body.member.id, body.team.id],
        'the session read back: member and team (D-67)',
        read,
      );
      const out = await call('DELETE', '/sessions/current');
      ctx.check(out.status === 200, `sign-out: expected HTTP 200, got ${out.status} (D-67)`, out);
      const after = await call('GET', '/session');
      ctx.check(
        after.status === 401,
        `the session after its sign-out: expected HTTP 401, got ${after.status} (D-67: sign-out ends it)`,
        after,
      );
    },
  },
]);

export const completionLeft: CaseDef[] = defineCases('4.7', [
  {
    id: 'S4.7-completion-left-stops',
    level: 'REFERENCE',
    capability: 'webhooks',
    needs: ['admin', 'apps.slow'],
    description:
      'D-19 (kept for completions by D-34): a streamed completion of apps.slow whose client leaves after its first text stops: its event is completion.failed with {type: request_aborted, code: client_disconnected}, never completion.completed (D-83, seen by an endpoint of apps.slow)',
    clauses: ['D-19', 'D-83'],
    async run(ctx) {
      const app = ctx.app('apps.slow');
      await withEndpoint(
        ctx,
        'completion-left',
        ['completion.completed', 'completion.failed'],
        undefined,
        async (h) => {
          let id = '';
          const ex = await ctx.send({
            method: 'POST',
            path: appPath(app, 'completions'),
            body: { prompt: 'Say hello.', stream: true },
            onEvent: (e, i) => {
              if (i === 0) id = String((e.json as Json | undefined)?.id ?? '');
              return e.event === 'response.output_text.delta' ? 'leave' : undefined;
            },
          });
          ctx.check(
            ex.sse?.left !== undefined && id !== '',
            'the completion of apps.slow ended before the suite could leave it mid-stream',
            ex,
          );
          const d = await h.receiver.waitFor((x) => x.path === h.path && dataOf(x).id === id, ctx.settleTimeoutMs, ctx.signal);
          if (!d)
            return ctx.fail(
              `no event about the completion ${id} its client left reached the endpoint within --settle-timeout ${ctx.settleTimeoutMs} ms (D-83)`,
            );
          const e = eventOf(d);
          ctx.check(
            e.type === 'completion.failed',
            `the completion ${id} whose client left ran on: its event is ${show(e.type)}, not completion.failed (D-19: a completion stops when its client leaves)`,
          );
          const error = (dataOf(d).error ?? {}) as Json;
          ctx.equal(
            { type: error.type, code: error.code },
            { type: 'request_aborted', code: 'client_disconnected' },
            `the completion.failed event of ${id}: data.error (D-19)`,
          );
        },
        app,
      );
    },
  },
]);
