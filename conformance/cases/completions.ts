// §4.7 create completion: shape, defaults, options, independence from conversations, errors.
import { defineCases, type CaseDef } from '../context.ts';
import {
  appPath,
  baselineCompletion,
  checkUnixSeconds,
  convPath,
  metrics,
  metricsAfterOneCreation,
  withBody,
  type Json,
} from './common.ts';

export const completions: CaseDef[] = defineCases('4.7', [
  {
    id: 'S4.7-completion-shape',
    level: 'MUST',
    clauses: [
      '§4.7.success',
      '§3.completed',
      '§4.7.stream-default',
      '§2.5.id',
      '§2.5.object',
      '§2.5.created_at',
      '§2.5.text',
      '§2.5.status',
    ],
    description: 'POST /completions without stream answers 200 JSON: a completed Completion (cmpl_ id, created_at in seconds) with text',
    async run(ctx) {
      const b = await baselineCompletion(ctx);
      ctx.jsonContentType(b.exchange, 'completion');
      ctx.equal(b.value.status, 'completed', 'status', b.exchange);
      checkUnixSeconds(ctx, b.value.created_at, 'Completion', b.exchange);
      ctx.check(String(b.value.text).length > 0, 'text is empty', b.exchange);
    },
  },
  {
    id: 'S4.7-completion-json-on-streaming-app',
    level: 'MUST',
    clauses: ['§4.7.stream-default'],
    needs: ['apps.stream_default'],
    description:
      "a completion without stream on an app whose default is streaming answers JSON: stream defaults to false for completions (§4.7), only send message follows the app's default (§6)",
    async run(ctx) {
      const b = await baselineCompletion(ctx);
      const ex = await ctx.send({ ...b.request, path: appPath(ctx.app('apps.stream_default'), 'completions') });
      ctx.jsonContentType(ex, 'completion without stream on apps.stream_default');
      ctx.equal(
        (ctx.ok(ex, ctx.schemas.completion, 'completion without stream on apps.stream_default') as Json).status,
        'completed',
        'status',
        ex,
      );
    },
  },
  {
    id: 'S4.7-completion-stream-false',
    level: 'MUST',
    clauses: ['§4.7.stream'],
    description: 'stream:false answers JSON',
    async run(ctx) {
      const b = await baselineCompletion(ctx);
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, stream: false })));
      ctx.jsonContentType(ex, 'stream:false');
      ctx.ok(ex, ctx.schemas.completion, 'completion stream:false');
    },
  },
  {
    id: 'S4.7-completion-distinct-ids',
    level: 'MUST',
    clauses: ['§4.7.independent'],
    description: 'each completion is independent and has its own id',
    async run(ctx) {
      const b = await baselineCompletion(ctx);
      const ex = await ctx.send(b.request);
      const c = ctx.ok(ex, ctx.schemas.completion, 'second completion') as Json;
      ctx.check(c.id !== b.value.id, `both completions have id ${String(c.id)}`, ex);
    },
  },
  {
    id: 'S4.7-completion-options',
    level: 'MUST',
    clauses: ['§4.7.knowledge_search', '§4.7.fast', '§4.7.metadata'],
    description: 'knowledge_search:false, fast:true and metadata are accepted',
    async run(ctx) {
      const b = await baselineCompletion(ctx);
      for (const change of [
        { knowledge_search: false },
        { fast: true },
        { fast: false, knowledge_search: true },
        { metadata: { ...ctx.tagMetadata, user_name: 'Ada' } },
      ]) {
        const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, ...change })));
        ctx.ok(ex, ctx.schemas.completion, `completion with ${JSON.stringify(change)}`);
      }
    },
  },
  {
    id: 'S4.7-completion-knowledge-base',
    level: 'MUST',
    clauses: ['§4.7.knowledge_search'],
    needs: ['apps.knowledge_base'],
    description: 'a completion on an app with a knowledge base, knowledge_search on, answers a Completion',
    async run(ctx) {
      const b = await baselineCompletion(ctx);
      const ex = await ctx.send({
        ...b.request,
        path: appPath(ctx.app('apps.knowledge_base'), 'completions'),
        body: { prompt: 'Summarize how a customer resets a password.', knowledge_search: true },
      });
      ctx.ok(ex, ctx.schemas.completion, 'completion with knowledge search');
    },
  },
  {
    id: 'S4.7-completion-no-conversation',
    level: 'MUST',
    clauses: ['§4.7.no-conversation'],
    description: 'a completion creates no conversation (list unchanged; metrics grow by one after the completion and one creation)',
    async run(ctx) {
      const b = await baselineCompletion(ctx);
      const before = await metrics(ctx);
      const list = await ctx.send({ method: 'GET', path: `${convPath(ctx.target.appId)}?limit=1` });
      const first = (ctx.ok(list, ctx.schemas.list, 'list') as Json).first_id;
      ctx.ok(await ctx.send(b.request), ctx.schemas.completion, 'completion');
      const list2 = await ctx.send({ method: 'GET', path: `${convPath(ctx.target.appId)}?limit=1` });
      ctx.equal((ctx.ok(list2, ctx.schemas.list, 'list') as Json).first_id, first, 'newest conversation after a completion', list2);
      const after = await metricsAfterOneCreation(ctx, before);
      ctx.equal(
        after.total_conversations - before.total_conversations,
        1,
        'change of total_conversations after a completion and one creation',
      );
    },
  },
  {
    id: 'S4.7-completion-missing-prompt',
    level: 'MUST',
    clauses: ['§4.7.prompt-required', '§7.malformed', 'D-1'],
    description: 'a completion without prompt is refused (reference: 400 param prompt, code missing_parameter)',
    async run(ctx) {
      const b = await baselineCompletion(ctx);
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, prompt: undefined })));
      ctx.invalid(ex, 'no prompt', { param: 'prompt', code: 'missing_parameter' });
    },
  },
  {
    id: 'S4.7-completion-wrong-type',
    level: 'REFERENCE',
    clauses: ['D-1'],
    description: 'D-1: stream that is not a boolean is 400 param stream, code invalid_type',
    async run(ctx) {
      const b = await baselineCompletion(ctx);
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, stream: 'yes' })));
      ctx.error(ex, 'stream "yes"', { status: 400, type: 'invalid_request_error', param: 'stream', code: 'invalid_type' });
    },
  },
]);
