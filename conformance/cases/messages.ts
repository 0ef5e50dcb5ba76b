// §4.6 send message: JSON and SSE by `stream` and the app default, errors, metadata, persisted
// items, generated titles, and the metrics they feed.
import { defineCases, type CaseContext, type CaseDef } from '../context.ts';
import { Item as ItemSchema } from '../../src/contract/index.ts';
import { checkStartEnd, checkText } from './events.ts';
import {
  baselineCreate,
  baselineSend,
  contentOf,
  convPath,
  createConversation,
  expectStream,
  getConversation,
  checkUnixSeconds,
  HOSTILE_TEXT,
  mentions,
  textOf,
  metrics,
  settledMetrics,
  unknownConversationId,
  withBody,
  type Json,
} from './common.ts';

async function send(ctx: CaseContext, app: string, convId: string, body: Json) {
  return ctx.send({ method: 'POST', path: convPath(app, convId), body });
}

const isSse = (ex: { sse?: unknown }) => ex.sse !== undefined;

/**
 * The most items one exchange may add to the history (§4.3, "the complete history of messages and
 * function calls"): the user's message and each output item, and a function call's result beside
 * its call, which an implementation may keep with it. More is a reply stored twice.
 */
function historyBound(outputItems: number, functionCalls: number): number {
  return 1 + outputItems + functionCalls;
}

/** The output items a stream carries (one per output_index of its item events) and its function calls. */
function streamedItems(events: ReadonlyArray<{ event: string; json: unknown }>): { items: number; calls: number } {
  const indexes = new Set<unknown>();
  let calls = 0;
  for (const e of events) {
    if (/^response\.(output_text|function_call|data_spec)/.test(e.event)) indexes.add((e.json as Json | undefined)?.output_index);
    if (e.event === 'response.function_call.start') calls++;
  }
  return { items: indexes.size, calls };
}

export const sendMessage: CaseDef[] = defineCases('4.6', [
  {
    id: 'S4.6-send-json-shape',
    level: 'MUST',
    clauses: [
      '§4.6.success-json',
      '§3.completed',
      '§2.3.object',
      '§2.3.created_at',
      '§2.3.conversation_id',
      '§2.3.output',
      '§2.3.status',
      '§2.4.type',
      '§2.4.message.role',
      '§2.4.message.content',
      '§2.2.role-default',
    ],
    description:
      'stream:false answers 200 JSON: a completed Response of this conversation (created_at in seconds) with an assistant message',
    async run(ctx) {
      const b = await baselineSend(ctx);
      ctx.jsonContentType(b.exchange, 'send message');
      ctx.equal(b.value.conversation_id, b.conversationId, 'conversation_id', b.exchange);
      checkUnixSeconds(ctx, b.value.created_at, 'Response', b.exchange);
      ctx.equal(b.value.status, 'completed', 'status', b.exchange);
      const output = b.value.output as Json[];
      const messages = output.filter((o) => o.type === 'message');
      ctx.check(messages.length > 0, 'output holds no message item', b.exchange);
      const texts = messages.flatMap((m) => ((m.content as Json[] | null) ?? []).filter((p) => p.type === 'text'));
      ctx.check(
        texts.length > 0 && texts.every((p) => typeof p.text === 'string'),
        'no text part ({type: "text", text: string}) in the message items',
        b.exchange,
      );
    },
  },
  {
    id: 'S4.6-send-distinct-responses',
    level: 'MUST',
    clauses: ['§2.3.id'],
    description: 'each message gets a Response with its own id',
    async run(ctx) {
      const b = await baselineSend(ctx);
      const ex = await ctx.send(
        withBody(b.request, (body) => ({ ...body, message: { content: 'And one more question: what are your opening hours?' } })),
      );
      const r = ctx.ok(ex, ctx.schemas.response, 'second message');
      ctx.check(r.id !== b.value.id, `both responses have id ${String(r.id)}`, ex);
    },
  },
  {
    id: 'S4.6-stream-true-gives-sse',
    level: 'MUST',
    clauses: ['§4.6.stream-true', '§6.selected'],
    description: 'stream:true answers 200 text/event-stream',
    async run(ctx) {
      const b = await baselineSend(ctx);
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, stream: true })));
      ctx.equal(ex.status, 200, 'status', ex);
      ctx.check(isSse(ex), `expected text/event-stream, got ${JSON.stringify(ex.headers.get('content-type'))}`, ex);
    },
  },
  {
    id: 'S4.6-app-default-json',
    level: 'MUST',
    clauses: ['§4.6.stream-default'],
    description: 'without stream, an app whose default is not streaming answers JSON',
    async run(ctx) {
      const b = await baselineSend(ctx);
      const ex = await ctx.send(withBody(b.request, (body) => ({ message: body.message })));
      ctx.jsonContentType(ex, 'send message without stream');
      ctx.ok(ex, ctx.schemas.response, 'send message without stream');
    },
  },
  {
    id: 'S4.6-app-default-sse',
    level: 'MUST',
    clauses: ['§4.6.stream-default', '§6.selected'],
    needs: ['apps.stream_default'],
    description: 'without stream, an app whose default is streaming answers text/event-stream',
    async run(ctx) {
      const app = ctx.app('apps.stream_default');
      const { conv } = await createConversation(ctx, undefined, app);
      const ex = await send(ctx, app, conv.id, { message: { content: 'Hello!' } });
      ctx.equal(ex.status, 200, 'status', ex);
      ctx.check(isSse(ex), `expected text/event-stream (the app default), got ${JSON.stringify(ex.headers.get('content-type'))}`, ex);
      const a = expectStream(ctx, ex, 'stream by app default');
      ctx.equal([a.types[0], a.types.at(-1)], ['response.created', 'response.completed'], '[first, last] event', ex);
    },
  },
  {
    id: 'S4.6-stream-false-overrides-default',
    level: 'MUST',
    clauses: ['§4.6.stream-false'],
    needs: ['apps.stream_default'],
    description: 'stream:false on an app whose default is streaming answers JSON',
    async run(ctx) {
      const app = ctx.app('apps.stream_default');
      const { conv } = await createConversation(ctx, undefined, app);
      const ex = await send(ctx, app, conv.id, { message: { content: 'Hello!' }, stream: false });
      ctx.jsonContentType(ex, 'stream:false');
      ctx.ok(ex, ctx.schemas.response, 'stream:false');
    },
  },
  {
    id: 'S4.6-stream-null',
    level: 'MUST',
    clauses: ['§4.6.stream-null'],
    description: 'stream:null is accepted (reference: it means the app default, JSON here)',
    async run(ctx) {
      const b = await baselineSend(ctx);
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, stream: null })));
      ctx.equal(ex.status, 200, 'status', ex);
      if (ctx.reference || !isSse(ex)) ctx.ok(ex, ctx.schemas.response, 'stream:null');
    },
  },
  {
    id: 'S4.6-role-user',
    level: 'MUST',
    clauses: ['§2.2.role-default'],
    description: 'role "user" is accepted',
    async run(ctx) {
      const b = await baselineSend(ctx);
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, message: { ...(body.message as Json), role: 'user' } })));
      ctx.ok(ex, ctx.schemas.response, 'role user');
    },
  },
  {
    id: 'S4.6-role-not-user',
    level: 'MUST',
    clauses: ['§2.2.role-only-user', 'D-15'],
    description: 'only role "user" is supported: role "assistant" is refused (reference: 400 param message.role, D-15)',
    async run(ctx) {
      const b = await baselineSend(ctx);
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, message: { ...(body.message as Json), role: 'assistant' } })));
      ctx.invalid(ex, 'role assistant', { param: 'message.role', code: 'invalid_value' });
    },
  },
  {
    id: 'S4.6-missing-message',
    level: 'MUST',
    clauses: ['§4.6.message-required', '§7.malformed', 'D-1'],
    description: 'a body without message is refused (reference: 400 param message, code missing_parameter)',
    async run(ctx) {
      const b = await baselineSend(ctx);
      const ex = await ctx.send(withBody(b.request, (body) => ({ stream: body.stream })));
      ctx.invalid(ex, 'no message', { param: 'message', code: 'missing_parameter' });
    },
  },
  {
    id: 'S4.6-missing-content',
    level: 'MUST',
    clauses: ['§2.2.content', '§7.malformed', 'D-1'],
    description: 'a message without content is refused (reference: 400 param message.content, code missing_parameter)',
    async run(ctx) {
      const b = await baselineSend(ctx);
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, message: {} })));
      ctx.invalid(ex, 'message without content', { param: 'message.content', code: 'missing_parameter' });
    },
  },
  {
    id: 'S4.6-refused-changes-nothing',
    level: 'REFERENCE',
    clauses: ['D-1'],
    description: 'D-1: a refused message adds no item to the conversation',
    async run(ctx) {
      const b = await baselineSend(ctx);
      const before = await getConversation(ctx, b.conversationId);
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, message: { ...(body.message as Json), role: 'assistant' } })));
      ctx.error(ex, 'role assistant', { status: 400 });
      const after = await getConversation(ctx, b.conversationId);
      ctx.equal(after.items.length, before.items.length, 'number of items after a refused message');
    },
  },
  {
    id: 'S4.6-unknown-conversation-404',
    level: 'MUST',
    clauses: ['§7.unknown-conversation@send', '§7.unknown-conversation@send-stream', '§4.6.errors', 'D-17'],
    description: 'sending to an unknown conversation is 404 not_found, an error object also with stream:true',
    async run(ctx) {
      const b = await baselineSend(ctx);
      const path = convPath(ctx.target.appId, await unknownConversationId(ctx));
      ctx.error(await ctx.send({ ...b.request, path }), 'unknown conversation', { status: 404, type: 'not_found' });
      // §4.6 documents the 404 error object for the endpoint, streaming or not.
      ctx.error(
        await ctx.send({ ...withBody(b.request, (body) => ({ ...body, stream: true })), path }),
        'unknown conversation, stream:true',
        { status: 404, type: 'not_found' },
      );
    },
  },
  {
    id: 'S4.6-deleted-conversation-404',
    level: 'REFERENCE',
    clauses: ['D-11'],
    description: 'D-11: sending to a deleted conversation is 404 not_found',
    async run(ctx) {
      const b = await baselineSend(ctx);
      const { conv } = await createConversation(ctx);
      ctx.ok(await ctx.send({ method: 'DELETE', path: convPath(ctx.target.appId, conv.id) }), ctx.schemas.deletion, 'delete');
      const ex = await ctx.send({ ...b.request, path: convPath(ctx.target.appId, conv.id) });
      ctx.error(ex, 'deleted conversation', { status: 404, type: 'not_found' });
    },
  },
  {
    id: 'S4.6-metadata-snapshot',
    level: 'MUST',
    clauses: ['§4.6.metadata-persisted', '§2.1.metadata'],
    description: "metadata sent with a message becomes the conversation's metadata",
    async run(ctx) {
      const b = await baselineSend(ctx);
      const snapshot = { ...ctx.tagMetadata, step: 'checkout', cart_items: 3 };
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, metadata: snapshot })));
      ctx.ok(ex, ctx.schemas.response, 'send with metadata');
      const got = await getConversation(ctx, b.conversationId);
      ctx.equal(got.metadata, snapshot, 'conversation metadata after the message');
    },
  },
  {
    id: 'S4.6-metadata-null-accepted',
    level: 'MUST',
    clauses: ['§4.6.metadata-null'],
    description: 'metadata: null is accepted (§4.6: object or null)',
    async run(ctx) {
      const b = await baselineSend(ctx);
      ctx.ok(await ctx.send(withBody(b.request, (body) => ({ ...body, metadata: null }))), ctx.schemas.response, 'send with metadata null');
    },
  },
  {
    id: 'S4.6-metadata-omitted-keeps',
    level: 'REFERENCE',
    clauses: ['D-9'],
    description: 'D-9: a message with metadata omitted or null keeps the snapshot',
    async run(ctx) {
      const b = await baselineSend(ctx);
      const snapshot = { ...ctx.tagMetadata, step: 'kept' };
      ctx.ok(await ctx.send(withBody(b.request, (body) => ({ ...body, metadata: snapshot }))), ctx.schemas.response, 'send with metadata');
      ctx.ok(await ctx.send(withBody(b.request, (body) => ({ ...body, metadata: null }))), ctx.schemas.response, 'send with metadata null');
      ctx.ok(await ctx.send(b.request), ctx.schemas.response, 'send without metadata');
      const got = await getConversation(ctx, b.conversationId);
      ctx.equal(got.metadata, snapshot, 'metadata after messages without a new snapshot');
    },
  },
  {
    id: 'S4.6-persisted-items',
    level: 'MUST',
    clauses: ['§4.3.items-complete', '§4.3.items-sorted', '§4.3.new-empty'],
    description:
      "an exchange adds to the conversation's items the user message, then each message and function call of the reply, in order, and nothing more (§4.3)",
    async run(ctx) {
      const { conv } = await createConversation(ctx);
      const before = await getConversation(ctx, conv.id);
      const content = `Hello! How do I reset my password? (conformance run ${ctx.runId}) ${HOSTILE_TEXT}`;
      const ex = await send(ctx, ctx.target.appId, conv.id, { message: { content }, stream: false });
      const all = (ctx.ok(ex, ctx.schemas.response, 'send message') as Json).output as Json[];
      // A message whose content is null (§2.4) carries nothing to look for.
      const output = all.filter((o) => (o.type === 'message' && o.content !== null) || o.type === 'function_call');
      const got = await getConversation(ctx, conv.id);
      const added = got.items.slice(before.items.length);
      ctx.check(
        added.length >= 1 + output.length,
        `the exchange added ${added.length} items; its output has ${output.length} messages and function calls, plus the user's message`,
      );
      const most = historyBound(all.length, all.filter((o) => o.type === 'function_call').length);
      ctx.check(
        added.length <= most,
        `the exchange added ${added.length} items to the history, more than its question and the ${all.length} items of its output${most > 1 + all.length ? ` (and a result per function call)` : ''}: ${most}`,
      );
      // Item fields are not shown (§2.1): each part of the exchange is looked for in the items' JSON, in order.
      let at = added.findIndex((it) => mentions(it, content));
      ctx.check(at !== -1, `no item added by the exchange holds the user's message ${JSON.stringify(content)}`);
      output.forEach((o, i) => {
        const needles =
          o.type === 'message'
            ? ((o.content as Json[] | null) ?? []).flatMap((p) => (typeof p.text === 'string' ? [p.text] : []))
            : typeof o.call_id === 'string'
              ? [o.call_id]
              : [];
        const next = added.findIndex((it, k) => k > at && needles.every((n) => mentions(it, n)));
        ctx.check(
          next !== -1,
          `output #${i} (${o.type}${o.type === 'function_call' ? ` ${String(o.call_id)}` : ''}) is not among the items after the user's message${i > 0 ? ' and the output before it' : ''}`,
        );
        at = next;
      });
    },
  },
  {
    id: 'S4.6-persisted-items-agree',
    level: 'REFERENCE',
    clauses: ['D-14'],
    description: "D-14: items are the user message then exactly the Response's output, each with id, created_at and response_id",
    async run(ctx) {
      const { conv } = await createConversation(ctx);
      const content = 'Hello! How do I reset my password?';
      const ex = await send(ctx, ctx.target.appId, conv.id, { message: { content }, stream: false });
      const r = ctx.ok(ex, ctx.schemas.response, 'send message') as Json;
      const got = await getConversation(ctx, conv.id);
      got.items.forEach((it, i) => {
        ctx.shape(it, ItemSchema, `item #${i}`);
      });
      ctx.equal(
        contentOf(got.items),
        [{ type: 'message', role: 'user', text: content }, ...contentOf(r.output as Json[])],
        'items compared with the user message and the output',
      );
      ctx.check(
        got.items.slice(1).every((it) => it.response_id === r.id),
        `an output item is not linked to response_id ${String(r.id)}`,
      );
    },
  },
  {
    id: 'S4.6-generated-title',
    level: 'MUST',
    clauses: ['§2.1.title-generated', '§2.1.generated_title', 'D-8'],
    description:
      "a conversation created without a title has a generated_title after its first exchange, within the run's timeout (reference: en-ca and fr-ca, title still null, D-8)",
    async run(ctx) {
      const b = await baselineSend(ctx);
      // "After the first exchange" (§2.1; D-8 says no more): an implementation may title it a little later.
      const got = await ctx.poll(
        () => getConversation(ctx, b.conversationId),
        (c) => Object.keys((c.generated_title as object) ?? {}).length > 0,
      );
      const gt = got.generated_title as Record<string, string>;
      ctx.check(
        Object.keys(gt).length > 0 && Object.values(gt).every((v) => typeof v === 'string' && v.length > 0),
        `generated_title is ${JSON.stringify(gt)} after the first exchange`,
      );
      // §2.1: keys are locale codes (en-ca, fr-ca are the examples), whichever locales an implementation titles in.
      for (const k of Object.keys(gt))
        ctx.check(
          /^[a-z]{2,3}(-[a-z0-9]{2,8})*$/i.test(k),
          `generated_title key ${JSON.stringify(k)} is not a locale code (such as en-ca)`,
        );
      if (ctx.reference) {
        ctx.check(
          typeof gt['en-ca'] === 'string' && typeof gt['fr-ca'] === 'string',
          `generated_title lacks en-ca or fr-ca: ${JSON.stringify(gt)}`,
        );
        ctx.equal(got.title, null, 'title after the first exchange');
      }
    },
  },
  {
    id: 'S4.6-custom-title-kept',
    level: 'MUST',
    clauses: ['§2.1.title'],
    description: 'a custom title stays as it was after an exchange',
    async run(ctx) {
      const c = await baselineCreate(ctx);
      const ex = await send(ctx, ctx.target.appId, c.value.id, { message: { content: 'Hello!' }, stream: false });
      ctx.ok(ex, ctx.schemas.response, 'send message');
      const got = await getConversation(ctx, c.value.id);
      ctx.equal(got.title, c.value.title, 'title after an exchange');
    },
  },
]);

/**
 * Ten exchanges in one conversation, JSON and streamed in turn, each with its own metadata: the rules
 * hold for the tenth as for the first. Returns what each exchange sent and what came back.
 */
const EXCHANGES = 10;

export const severalExchanges: CaseDef[] = defineCases('4.6', [
  {
    id: 'S4.6-ten-exchanges',
    level: 'MUST',
    clauses: [
      '§6.each-exchange',
      '§4.3.items-complete',
      '§4.3.items-sorted',
      '§4.6.metadata-persisted',
      '§2.3.id',
      '§2.3.conversation_id',
      '§6.rule1',
      '§6.done.fields',
    ],
    description:
      'ten exchanges in one conversation, JSON and stream in turn: each reply is a well-formed Response or stream of that conversation with its own id, the history holds every question and reply in order and nothing more (no reply stored twice), and the metadata is the last one sent',
    async run(ctx) {
      const { conv } = await createConversation(ctx);
      const base = (await getConversation(ctx, conv.id)).items.length;
      const sent: Array<{ content: string; replies: string[]; id: string; most: number }> = [];
      for (let k = 1; k <= EXCHANGES; k++) {
        const content = `Question #${k} of conformance run ${ctx.runId}: how do I reset my password? ${HOSTILE_TEXT}`;
        const stream = k % 2 === 0;
        const ex = await send(ctx, ctx.target.appId, conv.id, {
          message: { content },
          stream,
          metadata: { ...ctx.tagMetadata, exchange: k },
        });
        const what = `exchange #${k}${stream ? ' {stream: true}' : ''}`;
        if (stream) {
          const a = expectStream(ctx, ex, what);
          checkStartEnd(ctx, ex, 'response', conv.id);
          checkText(ctx, ex);
          const id = String((ex.sse!.events[0]!.json as Json).id);
          const carried = streamedItems(ex.sse!.events);
          sent.push({
            content,
            replies: [...a.done.values()].filter((t) => t.length > 0),
            id,
            most: historyBound(carried.items, carried.calls),
          });
        } else {
          const r = ctx.ok(ex, ctx.schemas.response, what) as Json;
          ctx.equal(r.conversation_id, conv.id, `${what}: conversation_id`, ex);
          ctx.equal(r.status, 'completed', `${what}: status`, ex);
          const texts = (r.output as Json[])
            .filter((o) => o.type === 'message')
            .map(textOf)
            .filter((t) => t.length > 0);
          ctx.check(texts.length > 0, `${what}: no message with text in the output`, ex);
          const output = r.output as Json[];
          const most = historyBound(output.length, output.filter((o) => o.type === 'function_call').length);
          sent.push({ content, replies: texts, id: String(r.id), most });
        }
      }
      const ids = sent.map((s) => s.id);
      ctx.check(new Set(ids).size === ids.length, `two of the ten responses share an id: ${JSON.stringify(ids)}`);
      const got = await getConversation(ctx, conv.id);
      ctx.equal(got.metadata, { ...ctx.tagMetadata, exchange: EXCHANGES }, 'metadata after ten exchanges (the last snapshot sent)');
      // Item fields are not shown (§2.1): each question, then its replies, are looked for in order.
      const items = got.items.slice(base);
      let at = -1;
      const asked: number[] = [];
      sent.forEach((s, k) => {
        const q = items.findIndex((it, i) => i > at && mentions(it, s.content));
        ctx.check(
          q !== -1,
          `the user message of exchange #${k + 1} is not in the history after exchange #${k}'s items (${items.length} items after ten exchanges)`,
        );
        at = q;
        asked.push(q);
        s.replies.forEach((text, j) => {
          const r = items.findIndex((it, i) => i > at && mentions(it, text));
          ctx.check(r !== -1, `reply #${j + 1} of exchange #${k + 1} is not in the history after its question`);
          at = r;
        });
      });
      // An exchange's items run from its question to the next one's: no more than it may add.
      sent.forEach((s, k) => {
        const added = (asked[k + 1] ?? items.length) - asked[k]!;
        ctx.check(
          added <= s.most,
          `exchange #${k + 1}${k % 2 === 1 ? ' {stream: true}' : ''} left ${added} items in the history, more than its question, the items its reply carried and a result per function call: ${s.most} (a reply stored twice?)`,
        );
      });
    },
  },
]);

export const messageMetrics: CaseDef[] = defineCases('4.9', [
  {
    id: 'S4.9-metrics-messages',
    level: 'MUST',
    clauses: ['§4.9.messages', 'D-24'],
    description:
      "an exchange raises total_messages, within the run's timeout (reference: by the user message plus the assistant messages, D-24)",
    async run(ctx) {
      const b = await baselineSend(ctx);
      const before = await metrics(ctx);
      const ex = await ctx.send(b.request);
      const r = ctx.ok(ex, ctx.schemas.response, 'send message') as Json;
      const counted = ctx.reference ? 1 + (r.output as Json[]).filter((o) => o.type === 'message').length : 1;
      const after = await settledMetrics(ctx, (m) => m.total_messages - before.total_messages >= counted);
      const delta = after.total_messages - before.total_messages;
      if (ctx.reference) ctx.equal(delta, counted, 'change of total_messages after one exchange');
      else ctx.check(delta > 0, `total_messages did not grow after an exchange (${before.total_messages} → ${after.total_messages})`);
    },
  },
]);
