// §4.8 app config, §4.9 app metrics (D-24), §9 versioning.
import { defineCases, type CaseDef } from '../context.ts';
import { appPath, convPath, createConversation, metrics, metricsAfterOneCreation, settledMetrics } from './common.ts';

export const config: CaseDef[] = defineCases('4.8', [
  {
    id: 'S4.8-config-shape',
    level: 'MUST',
    clauses: ['§4.8.success', '§2.8.app_id', '§2.8.stream', '§2.8.generative_ui', '§2.8.agent.name', '§2.8.agent.config', '§1.json'],
    description: 'GET /config answers the App config of app_id (streaming default and generative UI off, per the target)',
    async run(ctx) {
      const ex = await ctx.send({ method: 'GET', path: appPath(ctx.target.appId, 'config') });
      const c = ctx.ok(ex, ctx.schemas.config, 'get config');
      ctx.jsonContentType(ex, 'get config');
      ctx.equal(c.app_id, ctx.target.appId, 'app_id', ex);
      ctx.equal([c.stream, c.generative_ui], [false, false], '[stream, generative_ui] of app_id (target.md)', ex);
    },
  },
  {
    id: 'S4.8-config-generative-ui',
    level: 'MUST',
    clauses: ['§2.8.generative_ui'],
    needs: ['apps.generative_ui'],
    description: 'the generative-UI app reports generative_ui: true',
    async run(ctx) {
      const ex = await ctx.send({ method: 'GET', path: appPath(ctx.app('apps.generative_ui'), 'config') });
      ctx.equal(ctx.ok(ex, ctx.schemas.config, 'get config').generative_ui, true, 'generative_ui', ex);
    },
  },
  {
    id: 'S4.8-config-stream-default',
    level: 'MUST',
    clauses: ['§2.8.stream'],
    needs: ['apps.stream_default'],
    description: 'the streaming-default app reports stream: true',
    async run(ctx) {
      const ex = await ctx.send({ method: 'GET', path: appPath(ctx.app('apps.stream_default'), 'config') });
      ctx.equal(ctx.ok(ex, ctx.schemas.config, 'get config').stream, true, 'stream', ex);
    },
  },
]);

export const metricsCases: CaseDef[] = defineCases('4.9', [
  {
    id: 'S4.9-metrics-shape',
    level: 'MUST',
    clauses: ['§4.9.success', '§2.9.total_conversations', '§2.9.total_messages', '§2.9.total_users'],
    description: 'GET /metrics answers {total_conversations, total_messages, total_users} (integers)',
    async run(ctx) {
      await metrics(ctx);
      ctx.jsonContentType(ctx.exchanges.at(-1)!, 'get metrics');
    },
  },
  {
    id: 'S4.9-metrics-conversations',
    level: 'MUST',
    clauses: ['§4.9.conversations'],
    description: "creating a conversation adds one to total_conversations (aggregated: within the run's timeout)",
    async run(ctx) {
      const before = await metrics(ctx);
      const after = await metricsAfterOneCreation(ctx, before);
      ctx.equal(after.total_conversations - before.total_conversations, 1, 'change of total_conversations after one creation');
    },
  },
  {
    id: 'S4.9-metrics-keep-deleted',
    level: 'REFERENCE',
    clauses: ['D-24'],
    description: 'D-24: deleting a conversation leaves total_conversations unchanged',
    async run(ctx) {
      const start = await metrics(ctx);
      const { conv } = await createConversation(ctx);
      const before = await settledMetrics(ctx, (m) => m.total_conversations > start.total_conversations);
      ctx.ok(await ctx.send({ method: 'DELETE', path: convPath(ctx.target.appId, conv.id) }), ctx.schemas.deletion, 'delete');
      const after = await metricsAfterOneCreation(ctx, before);
      ctx.equal(after.total_conversations - before.total_conversations, 1, 'change of total_conversations after a delete and one creation');
    },
  },
  {
    id: 'S4.9-metrics-users',
    level: 'REFERENCE',
    clauses: ['D-24'],
    description: 'D-24: total_users counts distinct non-null external_user_id values',
    async run(ctx) {
      const before = await metrics(ctx);
      const user = `${ctx.tag}-metrics-user`;
      await createConversation(ctx, { external_user_id: user, metadata: ctx.tagMetadata });
      await createConversation(ctx, { external_user_id: user, metadata: ctx.tagMetadata });
      await createConversation(ctx, { metadata: ctx.tagMetadata });
      const after = await settledMetrics(ctx, (m) => m.total_conversations >= before.total_conversations + 3);
      ctx.equal(
        after.total_users - before.total_users,
        1,
        'change of total_users after two conversations of one new user and one without user',
      );
    },
  },
]);

export const versioning: CaseDef[] = defineCases('9', [
  {
    id: 'S9-base-url-v1',
    level: 'MUST',
    clauses: ['§9.v1'],
    description: 'the base URL ends in /v1 and serves the API there',
    async run(ctx) {
      ctx.check(
        new URL(ctx.target.baseUrl).pathname.replace(/\/+$/, '').endsWith('/v1'),
        `base_url ${ctx.target.baseUrl} does not end in /v1`,
      );
      const ex = await ctx.send({ method: 'GET', path: appPath(ctx.target.appId, 'config') });
      ctx.ok(ex, ctx.schemas.config, 'get config under /v1');
    },
  },
]);
