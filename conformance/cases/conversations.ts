// §4.1, §4.3, §4.4, §4.5: create, read, rename and soft-delete a conversation.
import { defineCases, type CaseDef } from '../context.ts';
import {
  baselineCreate,
  checkUnixSeconds,
  convPath,
  createConversation,
  getConversation,
  liveConversation,
  unknownConversationId,
  withBody,
} from './common.ts';

export const create: CaseDef[] = defineCases('4.1', [
  {
    id: 'S4.1-create-shape',
    level: 'MUST',
    clauses: [
      '§4.1.success',
      '§4.1.echo',
      '§2.1.object',
      '§2.1.created_at',
      '§2.1.external_user_id',
      '§2.1.title',
      '§2.1.metadata',
      '§1.json',
    ],
    description: 'POST /conversations answers 200 with a Conversation echoing external_user_id, title and metadata',
    async run(ctx) {
      const b = await baselineCreate(ctx);
      ctx.jsonContentType(b.exchange, 'create conversation');
      const body = b.request.body as Record<string, unknown>;
      ctx.equal(b.value.object, 'conversation', 'object', b.exchange);
      ctx.equal(b.value.external_user_id, body.external_user_id, 'external_user_id', b.exchange);
      ctx.equal(b.value.title, body.title, 'title', b.exchange);
      ctx.equal(b.value.metadata, body.metadata, 'metadata', b.exchange);
      checkUnixSeconds(ctx, b.value.created_at, 'Conversation', b.exchange);
    },
  },
  {
    id: 'S4.1-create-empty-body',
    level: 'MUST',
    clauses: ['§4.1.optional'],
    description: 'every field is optional: {} creates a conversation',
    async run(ctx) {
      const { conv } = await createConversation(ctx, {});
      // {} carries no tag of the run: deleted at once rather than at the end, which an interrupted run may not reach.
      await ctx.send({ method: 'DELETE', path: convPath(ctx.target.appId, conv.id) });
    },
  },
  {
    id: 'S4.1-create-distinct-ids',
    level: 'MUST',
    clauses: ['§2.1.id'],
    description: 'two creations give two different ids',
    async run(ctx) {
      const a = await createConversation(ctx);
      const b = await createConversation(ctx);
      ctx.check(a.conv.id !== b.conv.id, `both conversations got id ${a.conv.id}`, b.ex);
    },
  },
  {
    id: 'S4.1-create-defaults',
    level: 'REFERENCE',
    clauses: ['D-8', 'D-9', 'D-10'],
    description: 'D-8/D-9/D-10: omitted title, metadata and external_user_id read back as null, {} and null; generated_title is {}',
    async run(ctx) {
      const a = await createConversation(ctx, { metadata: ctx.tagMetadata });
      ctx.equal(a.conv.external_user_id, null, 'external_user_id when omitted', a.ex);
      ctx.equal(a.conv.title, null, 'title when omitted', a.ex);
      ctx.equal(a.conv.generated_title, {}, 'generated_title before any exchange', a.ex);
      const b = await createConversation(ctx, { external_user_id: ctx.tag });
      ctx.equal(b.conv.metadata, {}, 'metadata when omitted', b.ex);
    },
  },
  {
    id: 'S4.1-create-malformed-json',
    level: 'MUST',
    clauses: ['§7.malformed', '§7.body', 'D-1'],
    description: 'a body that is not JSON is refused with a 4xx error object (reference: 400 invalid_json, D-1)',
    async run(ctx) {
      const b = await baselineCreate(ctx);
      const ex = await ctx.send({ ...b.request, body: undefined, raw: '{"title": "x",', headers: { 'content-type': 'application/json' } });
      ctx.invalid(ex, 'malformed JSON', { param: null, code: 'invalid_json' });
    },
  },
  {
    id: 'S4.1-create-unknown-field',
    level: 'REFERENCE',
    clauses: ['D-1'],
    description: 'D-1: an unknown top-level field is 400 invalid_request_error, param = the field, code unknown_parameter',
    async run(ctx) {
      const b = await baselineCreate(ctx);
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, colour: 'blue' })));
      ctx.error(ex, 'unknown field', { status: 400, type: 'invalid_request_error', param: 'colour', code: 'unknown_parameter' });
    },
  },
  {
    id: 'S4.1-create-wrong-type',
    level: 'REFERENCE',
    clauses: ['D-1'],
    description: 'D-1: a title that is not a string is 400 invalid_request_error, param title, code invalid_type',
    async run(ctx) {
      const b = await baselineCreate(ctx);
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, title: 42 })));
      ctx.error(ex, 'numeric title', { status: 400, type: 'invalid_request_error', param: 'title', code: 'invalid_type' });
    },
  },
  {
    id: 'S4.1-create-title-length',
    level: 'REFERENCE',
    clauses: ['D-8'],
    description: 'D-8: a custom title of 256 characters is kept, 257 is 400 param title',
    async run(ctx) {
      const b = await baselineCreate(ctx);
      const ok = await createConversation(ctx, { ...(b.request.body as object), title: 't'.repeat(256) });
      ctx.equal(ok.conv.title, 't'.repeat(256), 'title of 256 characters', ok.ex);
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, title: 't'.repeat(257) })));
      ctx.error(ex, 'title of 257 characters', { status: 400, type: 'invalid_request_error', param: 'title', code: 'invalid_value' });
    },
  },
  {
    id: 'S4.1-create-external-user-id-length',
    level: 'REFERENCE',
    clauses: ['D-10'],
    description: 'D-10: external_user_id of 256 characters is kept, 257 is 400 param external_user_id',
    async run(ctx) {
      const b = await baselineCreate(ctx);
      const long = `${ctx.tag}-`.padEnd(256, 'u');
      const ok = await createConversation(ctx, { ...(b.request.body as object), external_user_id: long });
      ctx.equal(ok.conv.external_user_id, long, 'external_user_id of 256 characters', ok.ex);
      const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, external_user_id: `${long}u` })));
      ctx.error(ex, 'external_user_id of 257 characters', {
        status: 400,
        type: 'invalid_request_error',
        param: 'external_user_id',
        code: 'invalid_value',
      });
    },
  },
]);

export const get: CaseDef[] = defineCases('4.3', [
  {
    id: 'S4.3-get-shape',
    level: 'MUST',
    clauses: ['§4.3.success', '§2.1.items'],
    description: 'GET a conversation answers 200 with the Conversation it was created as, plus items (an array)',
    async run(ctx) {
      const b = await baselineCreate(ctx);
      const got = await getConversation(ctx, b.value.id);
      for (const k of ['id', 'object', 'created_at', 'external_user_id', 'title', 'metadata'] as const) {
        ctx.equal(got[k], b.value[k], `field ${k} compared with the create response`);
      }
      ctx.check(Array.isArray(got.items), 'items is not an array');
    },
  },
  {
    id: 'S4.3-get-new-has-no-items',
    level: 'REFERENCE',
    clauses: ['§4.3.new-empty', 'D-14'],
    // The interface does not say a new history is empty (an agent may greet): spec reads it as a base.
    description: 'D-14: a conversation without any message has an empty items array',
    async run(ctx) {
      const c = await liveConversation(ctx);
      const got = await getConversation(ctx, c.id);
      ctx.equal(got.items, [], 'items of a new conversation');
    },
  },
  {
    id: 'S4.3-get-unknown-404',
    level: 'MUST',
    clauses: ['§7.unknown-conversation@get', '§7.not_found', '§2.10.ids-opaque'],
    description: 'GET an unknown conversation id (shaped like a real one) is 404 not_found',
    async run(ctx) {
      const ex = await ctx.send({ method: 'GET', path: convPath(ctx.target.appId, await unknownConversationId(ctx)) });
      ctx.error(ex, 'unknown conversation', { status: 404, type: 'not_found' });
    },
  },
]);

export const update: CaseDef[] = defineCases('4.4', [
  {
    id: 'S4.4-update-title',
    level: 'MUST',
    clauses: ['§4.4.title', '§4.4.success'],
    description: 'PATCH {title} answers the renamed Conversation, and a later GET shows the new title',
    async run(ctx) {
      const { conv } = await createConversation(ctx);
      const ex = await ctx.send({ method: 'PATCH', path: convPath(ctx.target.appId, conv.id), body: { title: 'Renamed by conformance' } });
      const c = ctx.ok(ex, ctx.schemas.conversation, 'update conversation');
      ctx.equal([c.id, c.created_at], [conv.id, conv.created_at], '[id, created_at] compared with the create response', ex);
      ctx.equal(c.title, 'Renamed by conformance', 'title in the PATCH response', ex);
      const got = await getConversation(ctx, conv.id);
      ctx.equal(got.title, 'Renamed by conformance', 'title read back');
    },
  },
  {
    id: 'S4.4-update-title-null',
    level: 'MUST',
    clauses: ['§4.4.title-null'],
    description: 'PATCH {title: null} clears the custom title',
    async run(ctx) {
      const { conv } = await createConversation(ctx, { external_user_id: ctx.tag, title: 'To be cleared' });
      const ex = await ctx.send({ method: 'PATCH', path: convPath(ctx.target.appId, conv.id), body: { title: null } });
      const c = ctx.ok(ex, ctx.schemas.conversation, 'clear title');
      ctx.equal(c.title, null, 'title after PATCH {title: null}', ex);
      const got = await getConversation(ctx, conv.id);
      ctx.equal(got.title, null, 'title read back');
    },
  },
  {
    id: 'S4.4-update-unknown-404',
    level: 'MUST',
    clauses: ['§7.unknown-conversation@update', '§2.10.ids-opaque'],
    description: 'PATCH an unknown conversation id is 404 not_found',
    async run(ctx) {
      const ex = await ctx.send({
        method: 'PATCH',
        path: convPath(ctx.target.appId, await unknownConversationId(ctx)),
        body: { title: 'x' },
      });
      ctx.error(ex, 'unknown conversation', { status: 404, type: 'not_found' });
    },
  },
  {
    id: 'S4.4-update-only-title',
    level: 'MUST',
    clauses: ['§4.4.only-title'],
    description:
      'only the custom title can be updated: a PATCH with title and metadata is refused with a 4xx error object or leaves metadata as it was',
    async run(ctx) {
      const { conv } = await createConversation(ctx, { external_user_id: ctx.tag, title: 'Kept', metadata: ctx.tagMetadata });
      const ex = await ctx.send({
        method: 'PATCH',
        path: convPath(ctx.target.appId, conv.id),
        body: { title: 'Changed', metadata: { ...ctx.tagMetadata, changed: true } },
      });
      if (ex.status >= 400) ctx.error(ex, 'PATCH with title and metadata');
      else
        ctx.equal(
          ctx.ok(ex, ctx.schemas.conversation, 'PATCH with title and metadata').metadata,
          ctx.tagMetadata,
          'metadata in the PATCH response',
          ex,
        );
      const got = await getConversation(ctx, conv.id);
      ctx.equal(got.metadata, ctx.tagMetadata, 'metadata read back after a PATCH with title and metadata');
    },
  },
  {
    id: 'S4.4-update-other-field',
    level: 'REFERENCE',
    clauses: ['D-13'],
    description: 'D-13: PATCH with a field other than title is 400 and changes nothing',
    async run(ctx) {
      const { conv } = await createConversation(ctx, { external_user_id: ctx.tag, title: 'Kept', metadata: ctx.tagMetadata });
      const ex = await ctx.send({
        method: 'PATCH',
        path: convPath(ctx.target.appId, conv.id),
        body: { title: 'Changed', metadata: { a: 1 } },
      });
      ctx.error(ex, 'PATCH with metadata', { status: 400, type: 'invalid_request_error', param: 'metadata', code: 'unknown_parameter' });
      const got = await getConversation(ctx, conv.id);
      ctx.equal([got.title, got.metadata], ['Kept', ctx.tagMetadata], 'title and metadata after the refused PATCH');
    },
  },
  {
    id: 'S4.4-update-missing-title',
    level: 'REFERENCE',
    clauses: ['D-13'],
    description: 'D-13: PATCH {} is 400 param title, code missing_parameter',
    async run(ctx) {
      const c = await liveConversation(ctx);
      const ex = await ctx.send({ method: 'PATCH', path: convPath(ctx.target.appId, c.id), body: {} });
      ctx.error(ex, 'PATCH {}', { status: 400, type: 'invalid_request_error', param: 'title', code: 'missing_parameter' });
    },
  },
]);

export const remove: CaseDef[] = defineCases('4.5', [
  {
    id: 'S4.5-delete-shape',
    level: 'MUST',
    clauses: ['§4.5.success', '§2.7.id', '§2.7.object', '§2.7.deleted'],
    description: 'DELETE answers 200 {id, object: "conversation", deleted: true}',
    async run(ctx) {
      const { conv } = await createConversation(ctx);
      const ex = await ctx.send({ method: 'DELETE', path: convPath(ctx.target.appId, conv.id) });
      const d = ctx.ok(ex, ctx.schemas.deletion, 'delete conversation');
      ctx.equal(d.id, conv.id, 'id', ex);
    },
  },
  {
    id: 'S4.5-delete-unknown-404',
    level: 'MUST',
    clauses: ['§7.unknown-conversation@delete', '§2.10.ids-opaque'],
    description: 'DELETE an unknown conversation id is 404 not_found',
    async run(ctx) {
      const ex = await ctx.send({ method: 'DELETE', path: convPath(ctx.target.appId, await unknownConversationId(ctx)) });
      ctx.error(ex, 'unknown conversation', { status: 404, type: 'not_found' });
    },
  },
  {
    id: 'S4.5-deleted-is-404',
    level: 'REFERENCE',
    clauses: ['D-11'],
    description: 'D-11: after DELETE, get, update and delete of that conversation answer 404 not_found',
    async run(ctx) {
      const { conv } = await createConversation(ctx);
      ctx.ok(await ctx.send({ method: 'DELETE', path: convPath(ctx.target.appId, conv.id) }), ctx.schemas.deletion, 'delete');
      for (const [method, body] of [['GET'], ['PATCH', { title: 'x' }], ['DELETE']] as const) {
        const ex = await ctx.send({ method, path: convPath(ctx.target.appId, conv.id), body });
        ctx.error(ex, `${method} after delete`, { status: 404, type: 'not_found' });
      }
    },
  },
]);
