// §8 limits at and just past their boundary: metadata (16KB) on the three endpoints that take it,
// prompt length, message content (D-15), and the rate limit (D-23).
import { rows } from '../interface-clauses.ts';
import { defineCases, type CaseContext, type CaseDef } from '../context.ts';
import type { Exchange, OutgoingRequest } from '../http.ts';
import {
  baselineCompletion,
  baselineCreate,
  baselineSend,
  convPath,
  getConversation,
  metadataOfBytes,
  withBody,
  type Baseline,
} from './common.ts';

/**
 * "16KB maximum" (§8): how 16KB is counted is not shown. The spec profile reads it as a size in bytes
 * of the metadata's JSON, with margins for what the readings may differ by: 15,872 bytes (16,000, a
 * kilobyte of 1,000, less 128 for the spaces a serializer may put after ":" and ",") must pass, and
 * 16,896 bytes (16 KiB and 512 more) must be refused. The reference reads it exactly: 16,384 bytes of
 * compact JSON (D-9), so 16,384 passes and 16,385 is refused.
 */
const atLimit = (ctx: CaseContext) => (ctx.reference ? 16_384 : 15_872);
const pastLimit = (ctx: CaseContext) => (ctx.reference ? 16_385 : 16_896);

function metadataCases(
  endpoint: 'create' | 'send' | 'completion',
  name: string,
  slug: string,
  baseline: (ctx: CaseContext) => Promise<Baseline>,
  echo: (ctx: CaseContext, b: Baseline, ex: Awaited<ReturnType<CaseContext['send']>>, metadata: object) => Promise<void>,
): CaseDef[] {
  return defineCases('8', [
    {
      id: `S8-metadata-${slug}-at-limit`,
      level: 'MUST',
      clauses: [`§8.metadata@${endpoint}`, 'D-9'],
      description: `${name}: metadata of 15,872 bytes is accepted (reference: exactly 16,384 bytes, D-9)`,
      async run(ctx) {
        const b = await baseline(ctx);
        const metadata = metadataOfBytes(ctx, atLimit(ctx));
        const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, metadata })));
        await echo(ctx, b, ex, metadata);
      },
    },
    {
      id: `S8-metadata-${slug}-past-limit`,
      level: 'MUST',
      clauses: [`§8.metadata@${endpoint}`, '§7.malformed', 'D-9'],
      description: `${name}: metadata of 16,896 bytes, ASCII or not, is refused (reference: 16,385 bytes, 400 param metadata, code too_large, D-9)`,
      async run(ctx) {
        const b = await baseline(ctx);
        // ASCII, then two-byte characters (about half as many characters as bytes): the limit is a size.
        const bytes = pastLimit(ctx);
        for (const char of ['x', 'é'] as const) {
          const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, metadata: metadataOfBytes(ctx, bytes, char) })));
          ctx.invalid(ex, `metadata of ${bytes.toLocaleString('en-US')} bytes (${char === 'x' ? 'ASCII' : 'two-byte characters'})`, {
            param: 'metadata',
            code: 'too_large',
          });
        }
      },
    },
  ]);
}

function textOf(n: number): string {
  const sentence = 'Please summarize this sentence. ';
  return sentence.repeat(Math.ceil(n / sentence.length)).slice(0, n);
}

export const limits: CaseDef[] = [
  ...metadataCases('create', 'create conversation', 'create', baselineCreate, async (ctx, _b, ex, metadata) => {
    const c = ctx.ok(ex, ctx.schemas.conversation, 'create with metadata at the limit');
    ctx.equal(c.metadata, metadata, 'metadata echoed', ex);
  }),
  ...metadataCases('send', 'send message', 'send', baselineSend, async (ctx, b, ex, metadata) => {
    ctx.ok(ex, ctx.schemas.response, 'send with metadata at the limit');
    const got = await getConversation(ctx, (b as Awaited<ReturnType<typeof baselineSend>>).conversationId);
    ctx.equal(got.metadata, metadata, 'conversation metadata after the message');
  }),
  ...metadataCases('completion', 'create completion', 'completion', baselineCompletion, async (ctx, _b, ex) => {
    ctx.ok(ex, ctx.schemas.completion, 'completion with metadata at the limit');
  }),
  ...defineCases('8', [
    {
      id: 'S8-prompt-at-limits',
      level: 'MUST',
      clauses: ['§8.prompt'],
      description: 'a prompt of 1 and of 32,000 characters is accepted, also when they are two-byte characters (é)',
      async run(ctx) {
        const b = await baselineCompletion(ctx);
        for (const prompt of [textOf(1), textOf(32_000), 'é'.repeat(32_000)]) {
          const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, prompt })));
          ctx.ok(ex, ctx.schemas.completion, `prompt of ${prompt.length} ${prompt.startsWith('é') ? 'two-byte ' : ''}characters`);
        }
      },
    },
    {
      id: 'S8-prompt-empty',
      level: 'MUST',
      clauses: ['§8.prompt', '§7.malformed'],
      description: 'an empty prompt is refused (reference: 400 param prompt, code invalid_value)',
      async run(ctx) {
        const b = await baselineCompletion(ctx);
        const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, prompt: '' })));
        ctx.invalid(ex, 'empty prompt', { param: 'prompt', code: 'invalid_value' });
      },
    },
    {
      id: 'S8-prompt-past-limit',
      level: 'MUST',
      clauses: ['§8.prompt', '§7.malformed'],
      description: 'a prompt of 32,001 characters is refused (reference: 400 param prompt, code invalid_value)',
      async run(ctx) {
        const b = await baselineCompletion(ctx);
        const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, prompt: textOf(32_001) })));
        ctx.invalid(ex, 'prompt of 32,001 characters', { param: 'prompt', code: 'invalid_value' });
      },
    },
    {
      id: 'S8-content-limits',
      level: 'REFERENCE',
      clauses: ['D-15'],
      description: 'D-15: message content of 32,000 characters is accepted; empty and 32,001 are 400 param message.content',
      async run(ctx) {
        const b = await baselineSend(ctx);
        const ok = await ctx.send(withBody(b.request, (body) => ({ ...body, message: { content: textOf(32_000) } })));
        ctx.ok(ok, ctx.schemas.response, 'content of 32,000 characters');
        for (const n of [0, 32_001]) {
          const ex = await ctx.send(withBody(b.request, (body) => ({ ...body, message: { content: textOf(n) } })));
          ctx.error(ex, `content of ${n} characters`, {
            status: 400,
            type: 'invalid_request_error',
            param: 'message.content',
            code: 'invalid_value',
          });
        }
      },
    },
    {
      id: 'S8-rate-limit-429',
      level: 'MUST',
      clauses: ['§8.rate-limit.send', ...rows('§7.rate-limit'), '§7.rate_limit_exceeded', '§4.6.errors', 'D-23'],
      needs: ['apps.rate_limited'],
      noRetry: "a retry would meet the rate limit its first try used up, and judge the app's window instead of the case",
      description:
        'send message past the plan limit is 429 rate_limit_exceeded, an error object with stream: true as well; a 429 already on creating the conversation counts too (reference: create, send and completion count, with Retry-After, and nothing changes, D-23, D-27)',
      async run(ctx) {
        const app = ctx.app('apps.rate_limited');
        const created = await ctx.send({
          method: 'POST',
          path: convPath(app),
          body: { external_user_id: ctx.tag, metadata: ctx.tagMetadata },
        });
        if (created.status === 429) {
          // Whether endpoints other than send message are limited is not shown (§8): a limit that
          // refuses even the creation (a run moments ago used it up) is a limit enforced. The
          // reference counts creates too (D-27).
          ctx.error(created, 'create conversation on the rate-limited app', { status: 429, type: 'rate_limit_exceeded' });
          return;
        }
        const conv = ctx.ok(created, ctx.schemas.conversation, 'create conversation on the rate-limited app');
        const request: OutgoingRequest = {
          method: 'POST',
          path: convPath(app, conv.id),
          body: { message: { content: 'Hello!' }, stream: false },
        };
        let refused: Exchange | undefined;
        let counted: Exchange | undefined;
        for (let i = 0; i < 100 && !refused; i++) {
          const ex = await ctx.send(request);
          if (ex.status === 429) refused = ex;
          else if (ex.status !== 200)
            ctx.fail(
              `message #${i + 1} on the rate-limited app: expected HTTP 200 until the limit, then 429 rate_limit_exceeded; got ${ex.status}`,
              ex,
            );
          else {
            ctx.ok(ex, ctx.schemas.response, `message #${i + 1} on the rate-limited app`);
            counted = ex;
          }
        }
        if (!refused) return ctx.fail('no 429 after 100 messages on the rate-limited app');
        ctx.error(refused, 'message past the limit', { status: 429, type: 'rate_limit_exceeded' });
        // §4.6 documents 429 for the endpoint whether it streams or not: an error object, not a stream.
        const streamed = await ctx.send({ ...request, body: { ...(request.body as object), stream: true } });
        ctx.error(streamed, 'message past the limit, {stream: true}', { status: 429, type: 'rate_limit_exceeded' });
        if (!ctx.reference) return;
        const retry = refused.headers.get('retry-after');
        ctx.check(retry !== null && /^\d+$/.test(retry), `Retry-After is ${JSON.stringify(retry)}, not a number of seconds`, refused);
        if (counted) {
          for (const h of ['x-ratelimit-limit-requests', 'x-ratelimit-remaining-requests', 'x-ratelimit-reset-requests']) {
            ctx.check(counted.headers.get(h) !== null, `a counted request lacks the ${h} header`, counted);
          }
        }
        const before = await getConversation(ctx, conv.id, app);
        const again = await ctx.send(request);
        ctx.error(again, 'message past the limit', { status: 429, type: 'rate_limit_exceeded' });
        const after = await getConversation(ctx, conv.id, app);
        ctx.equal(after.items.length, before.items.length, 'items after a refused message');
      },
    },
  ]),
];
