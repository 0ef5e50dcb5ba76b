// §8 limits at and just past their boundary: metadata (16KB) on the three endpoints that take it,
// prompt length, message content (D-15), and the rate limit (D-23).
import { rows } from '../interface-clauses.ts';
import { defineCases, SetupUnmet, type CaseContext, type CaseDef } from '../context.ts';
import type { Exchange, OutgoingRequest } from '../http.ts';
import { retryAfterMs } from '../pace.ts';
import {
  baselineCompletion,
  baselineCreate,
  baselineSend,
  convPath,
  createConversation,
  getConversation,
  HOSTILE_TEXT,
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
      clauses: ['§8.rate-limit.send', ...rows('§7.rate-limit'), '§7.rate_limit_exceeded', '§4.6.errors', 'D-23', 'D-110', 'D-4'],
      needs: ['apps.rate_limited'],
      noRetry: "a retry would meet the rate limit its first try used up, and judge the app's window instead of the case",
      description:
        "send message past the plan limit is 429 rate_limit_exceeded, an error object with stream: true as well; a 429 on creating the conversation it needs (an earlier run used the window) is waited out until the window is empty (its x-ratelimit-reset-requests, else its Retry-After; an earlier run's requests still in it are filled up to the 429 first), up to --window-wait (60 s by default; longer: errored, not failed, D-176) (reference: create, send and completion count, D-110; Retry-After in seconds, no later than the window's reset; x-ratelimit-* on every counted request, the create included, and on the 429, the limit constant, remaining down by one a request and 0 on the 429; a create past the limit is 429 too; nothing changes, D-23, D-27; a malformed message past the limit is 429 too, D-4)",
      async run(ctx) {
        const app = ctx.app('apps.rate_limited');
        const created = await createPastTheWindow(ctx, app);
        const conv = ctx.ok(created, ctx.schemas.conversation, 'create conversation on the rate-limited app');
        const request: OutgoingRequest = {
          method: 'POST',
          path: convPath(app, conv.id),
          body: { message: { content: `Hello! ${HOSTILE_TEXT}` }, stream: false },
        };
        let refused: Exchange | undefined;
        const counted: Exchange[] = [];
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
            counted.push(ex);
          }
        }
        if (!refused) return ctx.fail('no 429 after 100 messages on the rate-limited app');
        ctx.error(refused, 'message past the limit', { status: 429, type: 'rate_limit_exceeded' });
        // §4.6 documents 429 for the endpoint whether it streams or not: an error object, not a stream.
        const streamed = await ctx.send({ ...request, body: { ...(request.body as object), stream: true } });
        ctx.error(streamed, 'message past the limit, {stream: true}', { status: 429, type: 'rate_limit_exceeded' });
        if (!ctx.reference) return;
        // D-110: the create counts, as every message after it.
        rateLimitHeaders(ctx, [created, ...counted], refused);
        const create = await ctx.send({ method: 'POST', path: convPath(app), body: { external_user_id: ctx.tag } });
        ctx.error(create, 'create conversation past the limit (D-110)', { status: 429, type: 'rate_limit_exceeded' });
        const before = await getConversation(ctx, conv.id, app);
        const again = await ctx.send(request);
        ctx.error(again, 'message past the limit', { status: 429, type: 'rate_limit_exceeded' });
        // D-4: the rate limit is judged before the body.
        const malformed = await ctx.send({ ...request, body: { message: {} } });
        ctx.error(malformed, 'a message without content past the limit (D-4: 429 before 400)', {
          status: 429,
          type: 'rate_limit_exceeded',
        });
        const after = await getConversation(ctx, conv.id, app);
        ctx.equal(after.items.length, before.items.length, 'items after a refused message');
      },
    },
    {
      id: 'S8-conversation-too-large',
      level: 'REFERENCE',
      clauses: ['D-29'],
      needs: ['apps.small_storage'],
      description:
        "D-29: a conversation's history is bounded (its plan's, 4 MiB by default; a few KiB on apps.small_storage): messages of 8,000 characters go on until one is refused, 400 invalid_request_error, param conversation_id, code conversation_too_large, with stream: true too, adding nothing; the conversation can still be read",
      async run(ctx) {
        const app = ctx.app('apps.small_storage');
        const { conv } = await createConversation(ctx, undefined, app);
        const send = (content: string, stream: boolean) =>
          ctx.send({ method: 'POST', path: convPath(app, conv.id), body: { message: { content }, stream } });
        const content = `${HOSTILE_TEXT} ${textOf(8_000 - HOSTILE_TEXT.length - 1)}`;
        let refused: Exchange | undefined;
        for (let i = 0; i < 64 && !refused; i++) {
          const ex = await send(content, false);
          if (ex.status !== 200) refused = ex;
        }
        if (!refused)
          return ctx.fail(
            '64 messages of 8,000 characters in one conversation of apps.small_storage, and none was refused (D-29; docs/target.md)',
          );
        const before = await getConversation(ctx, conv.id, app);
        const full = { status: 400, type: 'invalid_request_error', param: 'conversation_id', code: 'conversation_too_large' };
        ctx.error(refused, 'a message to a conversation whose history is full', full);
        ctx.error(await send('Hello!', true), 'a message with stream: true to a conversation whose history is full', full);
        ctx.equal((await getConversation(ctx, conv.id, app)).items.length, before.items.length, 'items after the refused messages');
        // What it stored counts against the app's quota (D-27), which the next case fills.
        ctx.ok(await ctx.send({ method: 'DELETE', path: convPath(app, conv.id) }), ctx.schemas.deletion, 'delete');
      },
    },
    {
      id: 'S8-storage-quota',
      level: 'REFERENCE',
      clauses: ['D-27'],
      needs: ['apps.small_storage'],
      description:
        "D-27: on apps.small_storage, creates with 15,872 bytes of metadata go on until the plan's storage quota refuses one, and messages until it is reached: 429 rate_limit_exceeded, code storage_quota_exceeded, x-should-retry: false and no Retry-After (waiting frees nothing), creating nothing; deleting the run's conversations frees it: a create passes again",
      async run(ctx) {
        const app = ctx.app('apps.small_storage');
        const create = () =>
          ctx.send({ method: 'POST', path: convPath(app), body: { external_user_id: ctx.tag, metadata: metadataOfBytes(ctx, 15_872) } });
        const made: string[] = [];
        let refused: Exchange | undefined;
        for (let i = 0; i < 64 && !refused; i++) {
          const ex = await create();
          if (ex.status === 200)
            made.push((ctx.ok(ex, ctx.schemas.conversation, `create #${i + 1} on apps.small_storage`) as { id: string }).id);
          else refused = ex;
        }
        if (!refused)
          return ctx.fail(
            '64 creates with 16 KB of metadata each on apps.small_storage, and none was refused: its storage quota is not small (docs/target.md)',
          );
        quotaRefusal(ctx, refused, 'create past the storage quota');
        const listed = await ctx.send({
          method: 'GET',
          path: `${convPath(app)}?limit=100&external_user_id=${encodeURIComponent(ctx.tag)}`,
        });
        ctx.equal(
          (ctx.ok(listed, ctx.schemas.list, 'list of apps.small_storage') as { data: Array<{ id: string }> }).data.length,
          made.length,
          "the run's conversations listed on apps.small_storage after the refused create",
          listed,
        );
        if (made.length === 0) return;
        // A message is taken while the quota is not reached, and may end past it (D-27); the next one is refused.
        let message: Exchange | undefined;
        for (let i = 0; i < 8; i++) {
          message = await ctx.send({
            method: 'POST',
            path: convPath(app, made[0]!),
            body: { message: { content: `Hello! ${HOSTILE_TEXT}` }, stream: false },
          });
          if (message.status !== 200) break;
        }
        quotaRefusal(ctx, message!, 'a message once the storage quota is reached');
        for (const id of made) ctx.ok(await ctx.send({ method: 'DELETE', path: convPath(app, id) }), ctx.schemas.deletion, 'delete');
        const freed = ctx.ok(
          await create(),
          ctx.schemas.conversation,
          "a create on apps.small_storage once the run's conversations are deleted (D-27: a soft delete frees the quota)",
        ) as { id: string };
        ctx.ok(await ctx.send({ method: 'DELETE', path: convPath(app, freed.id) }), ctx.schemas.deletion, 'delete');
      },
    },
  ]),
];

/**
 * The set-up of the rate-limit case: a create on the rate-limited app that an earlier run's window may
 * refuse. A 429 is waited out by its Retry-After (1 s, 2 s, 4 s… without one) as long as the run's
 * --settle-timeout allows, so that the rules of send message are checked however soon after another
 * run this one starts; past it the case fails, since they went unchecked (D-109).
 */
async function createPastTheWindow(ctx: CaseContext, app: string): Promise<Exchange> {
  // D-176: the window an earlier run left full is waited out, up to --window-wait, whatever --settle-timeout says.
  const deadline = Date.now() + ctx.windowWaitMs;
  for (let attempt = 0; attempt < 100; attempt++) {
    const ex = await ctx.send({ method: 'POST', path: convPath(app), body: { external_user_id: ctx.tag, metadata: ctx.tagMetadata } });
    if (ex.status !== 429) {
      // D-176 (revised): a window that still holds an earlier run's requests is filled, so that its 429 says when it is empty.
      if (!heldByEarlier(ex)) return ex;
      continue;
    }
    // Whether other endpoints than send message are limited is not shown (§8): a 429 here is one, as an error object.
    ctx.error(ex, 'create conversation on the rate-limited app (refused)', { status: 429, type: 'rate_limit_exceeded' });
    const header = ex.headers.get('retry-after');
    // Until the window is empty (its reset), not its first free request (Retry-After): in a sliding window the
    // earlier requests leaving one by one while the case counts would make the remaining count go up.
    const wait = Math.max(retryAfterMs(header) ?? 1000 * 2 ** attempt, durationMs(ex.headers.get('x-ratelimit-reset-requests')) ?? 0);
    if (Date.now() + wait > deadline)
      throw new SetupUnmet(
        `set-up: the conversation this case needs could not be created on the rate-limited app: refused with 429 (Retry-After ${JSON.stringify(header)}), a window an earlier run left full that does not free within --window-wait (${ctx.windowWaitMs} ms); nothing was judged: run again once it is free, or with --window-wait ${Math.ceil((wait + 1000) / 1000) * 1000}`,
        ex,
      );
    await ctx.setupWait(wait, `the rate-limited app's window (429, Retry-After ${JSON.stringify(header)})`);
  }
  return ctx.fail('100 creates on the rate-limited app and its window neither refused one nor was found empty (D-23, D-176)');
}

/** D-23: a counted request's headers show requests before it in its window (remaining below limit − 1). */
function heldByEarlier(ex: Exchange): boolean {
  const n = (name: string) => Number(ex.headers.get(`x-ratelimit-${name}-requests`) ?? Number.NaN);
  return ex.status === 200 && n('remaining') < n('limit') - 1;
}

/** `12.5s`, `1m30s`, `250ms`, `6` (seconds) → milliseconds; undefined when it is none of them. */
export function durationMs(value: string | null): number | undefined {
  if (value === null) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Number(value) * 1000;
  const parts = [...value.trim().matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== value.trim()) return undefined;
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;
  return parts.reduce((t, p) => t + Number(p[1]) * unit[p[2] as keyof typeof unit], 0);
}

/**
 * D-23: every counted request (D-110: the create first, then each message) carries x-ratelimit-limit-requests (the same each time),
 * -remaining-requests (down by one from one counted request to the next, 0 on the 429) and
 * -reset-requests (a duration); the 429's Retry-After is whole seconds, no later than its reset.
 */
function rateLimitHeaders(ctx: CaseContext, counted: Exchange[], refused: Exchange): void {
  const all = [...counted, refused];
  const read = (ex: Exchange, i: number) => {
    const what = i === 0 ? 'the create (counted, D-110)' : i < counted.length ? `message #${i} (counted)` : 'the message refused with 429';
    const h = (name: string) => ex.headers.get(`x-ratelimit-${name}-requests`);
    for (const name of ['limit', 'remaining', 'reset'])
      ctx.check(h(name) !== null, `${what} lacks the x-ratelimit-${name}-requests header (D-23)`, ex);
    const reset = durationMs(h('reset'));
    ctx.check(reset !== undefined, `${what}: x-ratelimit-reset-requests ${JSON.stringify(h('reset'))} is not a duration such as 12.5s`, ex);
    return { what, limit: Number(h('limit')), remaining: Number(h('remaining')), reset: reset! };
  };
  const seen = all.map(read);
  seen.forEach((s, i) => {
    const ex = all[i]!;
    ctx.equal(s.limit, seen[0]!.limit, `${s.what}: x-ratelimit-limit-requests (the plan's limit, as on the create)`, ex);
    if (i > 0 && i < counted.length)
      ctx.equal(
        s.remaining,
        seen[i - 1]!.remaining - 1,
        `${s.what}: x-ratelimit-remaining-requests (one less than on the request before)`,
        ex,
      );
  });
  const last = seen.at(-1)!;
  ctx.equal(last.remaining, 0, 'the message refused with 429: x-ratelimit-remaining-requests', refused);
  const retry = refused.headers.get('retry-after');
  ctx.check(retry !== null && /^\d+$/.test(retry), `Retry-After is ${JSON.stringify(retry)}, not a number of seconds`, refused);
  ctx.check(
    Number(retry) >= 1 && Number(retry) * 1000 <= last.reset + 1000,
    `Retry-After ${retry} (seconds) is later than the window's reset, x-ratelimit-reset-requests ${JSON.stringify(refused.headers.get('x-ratelimit-reset-requests'))}`,
    refused,
  );
}

/** D-27: the quota's refusal: 429 rate_limit_exceeded, code storage_quota_exceeded, nothing to wait for. */
function quotaRefusal(ctx: CaseContext, ex: Exchange, what: string): void {
  ctx.error(ex, what, { status: 429, type: 'rate_limit_exceeded', code: 'storage_quota_exceeded' });
  ctx.equal(ex.headers.get('retry-after'), null, `${what}: Retry-After (waiting frees no storage)`, ex);
  ctx.equal(ex.headers.get('x-should-retry'), 'false', `${what}: x-should-retry`, ex);
}
