// §1: request and response bodies are JSON, so their text is Unicode: what a client sends (a title,
// metadata, a message, a prompt) comes back as sent, byte for byte, whatever its characters (accents
// precomposed or combining, CJK, emoji beyond the BMP, right-to-left text): no normalization, no
// character lost or replaced on the way to storage and back.
import { defineCases, type CaseContext } from '../context.ts';
import type { Exchange } from '../http.ts';
import {
  appPath,
  baselineCompletion,
  convPath,
  createConversation,
  getConversation,
  HOSTILE_TEXT,
  mentions,
  withBody,
  type Json,
} from './common.ts';

/** Metadata whose keys and values are all hostile text, nested, with the run's tag. */
function hostileMetadata(ctx: CaseContext): Json {
  return { ...ctx.tagMetadata, [`clé ${HOSTILE_TEXT}`]: HOSTILE_TEXT, nested: { 'שלום 🧪': [HOSTILE_TEXT, 'e\u0301'] } };
}

/** Where two texts first differ, by code point: what a failure names instead of two long strings. */
export function firstDifference(sent: string, got: unknown): string {
  if (typeof got !== 'string') return `expected the text sent, got ${JSON.stringify(got)}`;
  const a = [...sent];
  const b = [...got];
  const i = a.findIndex((ch, k) => ch !== b[k]);
  const at = i === -1 ? a.length : i;
  const cp = (ch: string | undefined) =>
    ch === undefined ? 'the end' : `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
  return `the text sent comes back changed at code point ${at}: ${cp(a[at])} sent, ${cp(b[at])} back (sent ${JSON.stringify(sent)}, back ${JSON.stringify(got)})`;
}

/** Every string inside a JSON value. */
function strings(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (v && typeof v === 'object') return Object.values(v).flatMap(strings);
  return [];
}

function sameText(ctx: CaseContext, sent: string, got: unknown, what: string, ex?: Exchange): void {
  if (got !== sent) ctx.fail(`${what}: ${firstDifference(sent, got)}`, ex);
}

export const unicodeCreate = defineCases('4.1', [
  {
    id: 'S4.1-create-text-round-trip',
    level: 'MUST',
    clauses: ['§1.json-text', '§4.1.echo', '§2.1.title', '§2.1.external_user_id', '§2.1.metadata'],
    description:
      'a title, external_user_id and metadata (keys and values) of accented, combining, CJK, emoji, right-to-left text come back byte for byte: in the answer, the read and the list',
    async run(ctx) {
      const title = `Titre ${HOSTILE_TEXT}`;
      const user = `${ctx.tag} ${HOSTILE_TEXT}`;
      const metadata = hostileMetadata(ctx);
      const { ex, conv } = await createConversation(ctx, { title, external_user_id: user, metadata });
      sameText(ctx, title, conv.title, 'title in the create answer', ex);
      sameText(ctx, user, conv.external_user_id, 'external_user_id in the create answer', ex);
      ctx.equal(conv.metadata, metadata, 'metadata in the create answer', ex);
      const got = await getConversation(ctx, conv.id);
      sameText(ctx, title, got.title, 'title read back');
      sameText(ctx, user, got.external_user_id, 'external_user_id read back');
      ctx.equal(got.metadata, metadata, 'metadata read back');
      const list = await ctx.send({ method: 'GET', path: `${convPath(ctx.target.appId)}?limit=100` });
      const listed = (ctx.ok(list, ctx.schemas.list, 'list') as { data: Json[] }).data.find((c) => c.id === conv.id);
      if (!listed) return ctx.fail(`conversation ${conv.id} is not in the newest 100 of the list`, list);
      sameText(ctx, title, listed.title, 'title in the list', list);
    },
  },
]);

export const unicodeUpdate = defineCases('4.4', [
  {
    id: 'S4.4-update-text-round-trip',
    level: 'MUST',
    clauses: ['§1.json-text', '§4.4.title'],
    description: 'a title renamed to accented, combining, CJK, emoji, right-to-left text comes back byte for byte, answered and read',
    async run(ctx) {
      const { conv } = await createConversation(ctx);
      const title = `Renommé ${HOSTILE_TEXT}`;
      const ex = await ctx.send({ method: 'PATCH', path: convPath(ctx.target.appId, conv.id), body: { title } });
      sameText(ctx, title, ctx.ok(ex, ctx.schemas.conversation, 'update conversation').title, 'title in the PATCH answer', ex);
      sameText(ctx, title, (await getConversation(ctx, conv.id)).title, 'title read back');
    },
  },
]);

export const unicodeSend = defineCases('4.6', [
  {
    id: 'S4.6-text-round-trip',
    level: 'MUST',
    clauses: ['§1.json-text', '§4.3.items-complete', '§4.6.metadata-persisted'],
    description:
      'a message and metadata of accented, combining, CJK, emoji, right-to-left text, sent as JSON and as a stream: the history holds the message byte for byte, and the metadata comes back as sent',
    async run(ctx) {
      const { conv } = await createConversation(ctx);
      for (const stream of [false, true]) {
        const content = `${stream ? 'Streamed' : 'Sent'} (${ctx.runId}): ${HOSTILE_TEXT}`;
        const metadata = { ...hostileMetadata(ctx), stream };
        const ex = await ctx.send({
          method: 'POST',
          path: convPath(ctx.target.appId, conv.id),
          body: { message: { content }, stream, metadata },
        });
        ctx.equal(ex.status, 200, `send message${stream ? ' {stream: true}' : ''}: status`, ex);
        const got = await getConversation(ctx, conv.id);
        // Item fields are not shown (§2.1): the message is looked for, whole, in the items' JSON.
        if (!got.items.some((it) => mentions(it, content))) {
          const head = content.slice(0, content.indexOf(':') + 1);
          const near = got.items.flatMap(strings).find((t) => t.startsWith(head));
          ctx.fail(
            `the history does not hold the message${stream ? ' sent with stream: true' : ''} as sent${near === undefined ? '' : `: ${firstDifference(content, near)}`}`,
          );
        }
        ctx.equal(got.metadata, metadata, `metadata after the message${stream ? ' sent with stream: true' : ''}`);
      }
    },
  },
]);

export const unicodeCompletion = defineCases('4.7', [
  {
    id: 'S4.7-completion-text',
    level: 'MUST',
    clauses: ['§1.json-text', '§4.7.success'],
    description: 'a prompt and metadata of accented, combining, CJK, emoji, right-to-left text are accepted: a completed Completion',
    async run(ctx) {
      const b = await baselineCompletion(ctx);
      for (const stream of [false, true]) {
        const ex = await ctx.send({
          ...withBody(b.request, (body) => ({
            ...body,
            prompt: `Translate into English: ${HOSTILE_TEXT}`,
            metadata: hostileMetadata(ctx),
            stream,
          })),
          path: appPath(ctx.target.appId, 'completions'),
        });
        ctx.equal(ex.status, 200, `completion of a prompt of such text${stream ? ' {stream: true}' : ''}: status`, ex);
        if (!stream) ctx.equal((ctx.ok(ex, ctx.schemas.completion, 'completion') as Json).status, 'completed', 'status', ex);
      }
    },
  },
]);
