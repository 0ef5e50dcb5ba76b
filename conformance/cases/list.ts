// §4.2 list conversations: page shape, limit, order, the after/before cursors and whole walks (D-12).
import { defineCases, type CaseContext, type CaseDef } from '../context.ts';
import type { Exchange } from '../http.ts';
import { convPath, createConversation, type ConversationT } from './common.ts';

interface Page {
  ex: Exchange;
  data: ConversationT[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

async function page(ctx: CaseContext, query: Record<string, string | number>, app = ctx.target.appId): Promise<Page> {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)])).toString();
  const ex = await ctx.send({ method: 'GET', path: convPath(app) + (qs ? `?${qs}` : '') });
  const list = ctx.ok(ex, ctx.schemas.list, `list ?${qs}`) as Omit<Page, 'ex'>;
  ctx.equal(list.first_id, list.data[0]?.id ?? null, 'first_id (the first conversation of the page)', ex);
  ctx.equal(list.last_id, list.data.at(-1)?.id ?? null, 'last_id (the last conversation of the page)', ex);
  return { ex, ...list };
}

/**
 * Six conversations of the run, the newest of the app: three, a pause of more than a second, three
 * more. The interface orders by creation time only and its created_at counts seconds, so ties
 * within one second may go either way (D-7 breaks them by creation order): the pause makes the
 * two halves ordered under any tie-break. Padding first, so that the app holds more than one
 * default page (20).
 */
function walkSet(ctx: CaseContext): Promise<ConversationT[]> {
  return ctx.once('list: six conversations created in order', async () => {
    const existing = await page(ctx, { limit: 21 });
    for (let i = existing.data.length + 6; i < 21; i++) await createConversation(ctx);
    const set: ConversationT[] = [];
    for (let i = 0; i < 6; i++) {
      if (i === HALF) await new Promise((resolve) => setTimeout(resolve, 1_100));
      const { ex, conv } = await createConversation(ctx);
      set.push(conv);
      if (i === HALF)
        ctx.check(
          conv.created_at > set[HALF - 1]!.created_at,
          `created_at did not advance (${conv.created_at}) between two conversations created more than a second apart`,
          ex,
        );
    }
    return set;
  });
}

const HALF = 3;
const idsOf = (cs: ConversationT[]) => cs.map((c) => c.id);

/** The whole list in one order, in pages of 100: in profile spec, the order the implementation applies. */
function observed(ctx: CaseContext, order: 'asc' | 'desc'): Promise<string[]> {
  return ctx.once(`list: the whole ${order} list`, async () => {
    await walkSet(ctx);
    const { ids, pages } = await walk(ctx, order, () => 100);
    checkTimes(ctx, order, pages);
    return ids;
  });
}

/**
 * The run's six conversations in the order a list in `order` must show them. Reference: creation
 * order (D-7). Spec: the order the implementation showed in its whole list, which must keep the
 * halves apart (they differ by more than a second); inside a half any order it keeps is allowed.
 */
async function expectedOrder(ctx: CaseContext, order: 'asc' | 'desc'): Promise<string[]> {
  const set = idsOf(await walkSet(ctx));
  const created = order === 'asc' ? set : [...set].reverse();
  if (ctx.reference) return created;
  const shown = (await observed(ctx, order)).filter((id) => set.includes(id));
  const halves = (ids: string[]) => ids.map((id) => (set.indexOf(id) < HALF ? 'older' : 'newer'));
  ctx.equal(
    halves(shown),
    halves(created),
    `the run's conversations in the whole ${order} list, as older/newer than a pause of more than a second`,
  );
  return shown;
}

const MAX_PAGES = 1000;

/** Walks the list with `after = last_id` until has_more is false; `limitFor` sizes each page. */
async function walk(
  ctx: CaseContext,
  order: 'asc' | 'desc',
  limitFor: (seen: string[], n: number) => number,
): Promise<{ ids: string[]; pages: Page[] }> {
  const ids: string[] = [];
  const pages: Page[] = [];
  let after: string | null = null;
  for (let n = 0; n < MAX_PAGES; n++) {
    const limit = limitFor(ids, n);
    const p = await page(ctx, { order, limit, ...(after ? { after } : {}) });
    pages.push(p);
    ctx.check(p.data.length <= limit, `page of limit ${limit} has ${p.data.length} conversations`, p.ex);
    for (const c of p.data) {
      ctx.check(!ids.includes(c.id), `conversation ${c.id} was seen twice during the ${order} walk`, p.ex);
      ids.push(c.id);
    }
    if (!p.has_more) return { ids, pages };
    ctx.check(p.data.length > 0, 'has_more is true on an empty page', p.ex);
    after = p.last_id;
  }
  return ctx.fail(`the ${order} walk did not end after ${MAX_PAGES} pages`);
}

/**
 * A walk in pages of 2 where the run's conversations are (so that they straddle page
 * boundaries), of 100 elsewhere.
 */
async function smallPageWalk(ctx: CaseContext, order: 'asc' | 'desc'): Promise<{ ids: string[]; pages: Page[] }> {
  const set = idsOf(await walkSet(ctx));
  const first = set[0]!;
  return walk(ctx, order, (seen, n) => {
    const done = seen.includes(first);
    return order === 'desc' ? (done ? 100 : 2) : done || n < 20 ? 2 : 100;
  });
}

function checkTimes(ctx: CaseContext, order: 'asc' | 'desc', pages: Page[], along = 'the walk'): void {
  const times = pages.flatMap((p) => p.data.map((c) => c.created_at));
  for (let i = 1; i < times.length; i++) {
    const ok = order === 'asc' ? times[i]! >= times[i - 1]! : times[i]! <= times[i - 1]!;
    ctx.check(
      ok,
      `created_at is not ${order === 'asc' ? 'ascending' : 'descending'} along ${along} (${times[i - 1]} then ${times[i]})`,
      pages.at(-1)!.ex,
    );
  }
}

async function checkWalk(ctx: CaseContext, order: 'asc' | 'desc'): Promise<void> {
  const { ids, pages } = await smallPageWalk(ctx, order);
  const set = idsOf(await walkSet(ctx));
  const last = pages.at(-1)!;
  for (const id of set) ctx.check(ids.includes(id), `the ${order} walk never met the run's conversation ${id}`, last.ex);
  checkTimes(ctx, order, pages);
  ctx.equal(
    ids.filter((id) => set.includes(id)),
    await expectedOrder(ctx, order),
    `the run's conversations as the ${order} walk met them${ctx.reference ? ' (creation order, D-7)' : ' (compared with the whole list in pages of 100)'}`,
    last.ex,
  );
  ctx.equal(last.has_more, false, 'has_more on the last page', last.ex);
}

export const list: CaseDef[] = defineCases('4.2', [
  {
    id: 'S4.2-list-shape',
    level: 'MUST',
    clauses: ['§4.2.success', '§2.6.object', '§2.6.data', '§2.6.first_id', '§2.6.last_id', '§2.6.has_more'],
    description:
      'GET /conversations answers a list {object: "list", data, first_id, last_id, has_more} of at most 20, with the created_at each was created with',
    async run(ctx) {
      const set = await walkSet(ctx);
      const p = await page(ctx, {});
      ctx.jsonContentType(p.ex, 'list');
      ctx.check(p.data.length >= 1 && p.data.length <= 20, `default page has ${p.data.length} conversations (expected 1 to 20)`, p.ex);
      // The created_at that create answered (in seconds, S4.1-create-shape) is the one the list shows.
      for (const c of p.data) {
        const made = set.find((s) => s.id === c.id);
        if (made) ctx.equal(c.created_at, made.created_at, `created_at of ${c.id} in the list (create answered ${made.created_at})`, p.ex);
      }
    },
  },
  {
    id: 'S4.2-list-limit',
    level: 'MUST',
    clauses: ['§4.2.limit-range', '§2.6.has_more'],
    description: 'limit=2 gives 2 conversations and has_more when more exist; limit=1 and limit=100 are accepted',
    async run(ctx) {
      await walkSet(ctx);
      const two = await page(ctx, { limit: 2 });
      ctx.equal(two.data.length, 2, 'conversations in a page of limit 2', two.ex);
      ctx.equal(two.has_more, true, 'has_more with more than 2 conversations', two.ex);
      const one = await page(ctx, { limit: 1 });
      ctx.equal(one.data.length, 1, 'conversations in a page of limit 1', one.ex);
      const hundred = await page(ctx, { limit: 100 });
      ctx.check(
        hundred.data.length >= 6,
        `limit=100 returned ${hundred.data.length} conversations, fewer than the run created`,
        hundred.ex,
      );
    },
  },
  {
    id: 'S4.2-list-default-limit',
    level: 'MUST',
    clauses: ['§4.2.limit-default'],
    description: 'without limit a page holds 20 conversations when more than 20 exist',
    async run(ctx) {
      await walkSet(ctx);
      const p = await page(ctx, {});
      ctx.equal(p.data.length, 20, 'conversations in a default page', p.ex);
      ctx.equal(p.has_more, true, 'has_more with more than 20 conversations', p.ex);
    },
  },
  {
    id: 'S4.2-list-order-default-desc',
    level: 'MUST',
    clauses: ['§4.2.order-default', '§4.2.order', 'D-7'],
    description: 'the default order is desc: newest first (reference: ties in creation order, D-7)',
    async run(ctx) {
      const expected = await expectedOrder(ctx, 'desc');
      const set = idsOf(await walkSet(ctx));
      const p = await page(ctx, { limit: 100 });
      checkTimes(ctx, 'desc', [p], 'the default page');
      ctx.equal(
        p.data.map((c) => c.id).filter((id) => set.includes(id)),
        expected,
        "the run's conversations in a default page (as in the desc list)",
        p.ex,
      );
    },
  },
  {
    id: 'S4.2-list-after-walk-asc',
    level: 'MUST',
    clauses: ['§4.2.after', '§4.2.order', '§2.6.first_id', '§2.6.last_id', 'D-7'],
    description: 'passing last_id as after walks the asc list: each conversation once, oldest first, has_more false at the end',
    async run(ctx) {
      await checkWalk(ctx, 'asc');
    },
  },
  {
    id: 'S4.2-list-after-walk-desc',
    level: 'MUST',
    clauses: ['§4.2.after', '§4.2.order', 'D-12'],
    description:
      'passing last_id as after walks the desc list (the next page, §4.2): each conversation once, newest first, has_more false at the end',
    async run(ctx) {
      await checkWalk(ctx, 'desc');
    },
  },
  {
    id: 'S4.2-list-has-more',
    level: 'MUST',
    clauses: ['§2.6.has_more'],
    description: 'has_more is true exactly when conversations remain after the page',
    async run(ctx) {
      const { cursor, rest } = await newestThree(ctx);
      const full = await page(ctx, { order: 'asc', after: cursor, limit: 3 });
      ctx.equal(
        full.data.map((c) => c.id),
        rest,
        'asc page after the 4th newest conversation',
        full.ex,
      );
      ctx.equal(full.has_more, false, 'has_more when the page reaches the newest conversation', full.ex);
      const partial = await page(ctx, { order: 'asc', after: cursor, limit: 2 });
      ctx.equal(partial.has_more, true, 'has_more when one conversation remains', partial.ex);
    },
  },
  {
    id: 'S4.2-list-empty',
    level: 'MUST',
    clauses: ['§2.6.first_id', '§2.6.last_id', '§2.6.has_more'],
    description: 'an empty page is {data: [], first_id: null, last_id: null, has_more: false}',
    async run(ctx) {
      const { rest } = await newestThree(ctx);
      const p = await page(ctx, { order: 'asc', after: rest.at(-1)! });
      ctx.equal(
        [p.data, p.first_id, p.last_id, p.has_more],
        [[], null, null, false],
        '[data, first_id, last_id, has_more] after the newest conversation',
        p.ex,
      );
    },
  },
  {
    id: 'S4.2-list-before-asc',
    level: 'MUST',
    clauses: ['§4.2.before', 'D-12'],
    description:
      'before=<id> in asc order returns only conversations created before it, oldest first (reference: the page just before it, D-12)',
    async run(ctx) {
      const set = idsOf(await walkSet(ctx));
      const asc = await observed(ctx, 'asc');
      // Where only two conversations precede the cursor, "created before it" leaves no choice.
      const oldest = await page(ctx, { order: 'asc', before: asc[2]!, limit: 5 });
      ctx.equal(
        oldest.data.map((c) => c.id),
        asc.slice(0, 2),
        'asc page before the 3rd oldest conversation of the app',
        oldest.ex,
      );
      const p = await page(ctx, { order: 'asc', before: set[4]!, limit: 2 });
      if (ctx.reference)
        return ctx.equal(
          p.data.map((c) => c.id),
          [set[2], set[3]],
          'page before the 5th conversation of the run (the page just before it, D-12)',
          p.ex,
        );
      const at = asc.indexOf(set[4]!);
      const where = p.data.map((c) => asc.indexOf(c.id));
      ctx.equal(p.data.length, 2, 'conversations in an asc page of limit 2 before the 5th conversation of the run', p.ex);
      ctx.check(
        where.every((i, k) => i !== -1 && i < at && (k === 0 || i > where[k - 1]!)),
        `the page before ${set[4]} holds ${JSON.stringify(p.data.map((c) => c.id))}: not conversations created before it, oldest first`,
        p.ex,
      );
    },
  },
  {
    id: 'S4.2-list-before-desc',
    level: 'REFERENCE',
    clauses: ['D-12'],
    description: 'D-12: before=<id> in desc order returns the page that precedes it in that order (newer ones), newest first',
    async run(ctx) {
      const set = idsOf(await walkSet(ctx));
      const p = await page(ctx, { order: 'desc', before: set[1]!, limit: 2 });
      ctx.equal(
        p.data.map((c) => c.id),
        [set[3], set[2]],
        'desc page before the 2nd conversation of the run',
        p.ex,
      );
      ctx.equal(p.has_more, true, 'has_more (newer conversations remain)', p.ex);
    },
  },
  {
    id: 'S4.2-list-excludes-deleted',
    level: 'MUST',
    clauses: ['§3.soft-delete.list', '§4.5.soft'],
    description: '§3: a soft-deleted conversation is no longer returned by list',
    async run(ctx) {
      await walkSet(ctx);
      const { conv } = await createConversation(ctx);
      ctx.ok(await ctx.send({ method: 'DELETE', path: convPath(ctx.target.appId, conv.id) }), ctx.schemas.deletion, 'delete');
      const p = await page(ctx, { limit: 100 });
      ctx.check(!p.data.some((c) => c.id === conv.id), `deleted conversation ${conv.id} is still listed`, p.ex);
    },
  },
  {
    id: 'S4.2-list-deleted-cursor',
    level: 'REFERENCE',
    clauses: ['D-11'],
    description: 'D-11: the id of a deleted conversation remains a valid cursor',
    async run(ctx) {
      const set = idsOf(await walkSet(ctx));
      const { conv } = await createConversation(ctx);
      ctx.ok(await ctx.send({ method: 'DELETE', path: convPath(ctx.target.appId, conv.id) }), ctx.schemas.deletion, 'delete');
      const p = await page(ctx, { order: 'desc', after: conv.id, limit: 1 });
      ctx.equal(
        p.data.map((c) => c.id),
        [set.at(-1)],
        'desc page after the deleted conversation',
        p.ex,
      );
    },
  },
  {
    id: 'S4.2-list-unknown-cursor',
    level: 'REFERENCE',
    clauses: ['D-12'],
    description: 'D-12: an unknown cursor is 400 param after, code invalid_cursor',
    async run(ctx) {
      await walkSet(ctx);
      const ex = await ctx.send({ method: 'GET', path: `${convPath(ctx.target.appId)}?after=conv_conformance_unknown` });
      ctx.error(ex, 'unknown after cursor', { status: 400, type: 'invalid_request_error', param: 'after', code: 'invalid_cursor' });
    },
  },
  {
    id: 'S4.2-list-other-app-cursor',
    level: 'REFERENCE',
    clauses: ['D-12'],
    needs: ['apps.knowledge_base'],
    description:
      "D-12: a conversation of another app of the team is no cursor of this app's list: after or before it is 400 invalid_cursor, naming the parameter",
    async run(ctx) {
      await walkSet(ctx);
      const { conv } = await createConversation(ctx, undefined, ctx.app('apps.knowledge_base'));
      for (const param of ['after', 'before']) {
        const ex = await ctx.send({ method: 'GET', path: `${convPath(ctx.target.appId)}?${param}=${encodeURIComponent(conv.id)}` });
        ctx.error(ex, `${param}=<a conversation of apps.knowledge_base>`, {
          status: 400,
          type: 'invalid_request_error',
          param,
          code: 'invalid_cursor',
        });
      }
    },
  },
  {
    id: 'S4.2-list-after-and-before',
    level: 'REFERENCE',
    clauses: ['D-12'],
    description: 'D-12: after and before together are 400',
    async run(ctx) {
      const set = idsOf(await walkSet(ctx));
      const ex = await ctx.send({ method: 'GET', path: `${convPath(ctx.target.appId)}?after=${set[1]}&before=${set[4]}` });
      ctx.error(ex, 'after with before', { status: 400, type: 'invalid_request_error' });
    },
  },
  {
    id: 'S4.2-list-bad-order',
    level: 'REFERENCE',
    clauses: ['D-1'],
    description: 'D-1: order other than asc/desc is 400 param order',
    async run(ctx) {
      await walkSet(ctx);
      const ex = await ctx.send({ method: 'GET', path: `${convPath(ctx.target.appId)}?order=sideways` });
      ctx.error(ex, 'order=sideways', { status: 400, type: 'invalid_request_error', param: 'order' });
    },
  },
  {
    id: 'S4.2-list-filter-external-user',
    level: 'REFERENCE',
    clauses: ['D-10'],
    description: "D-10: ?external_user_id= lists only that user's conversations",
    async run(ctx) {
      const set = idsOf(await walkSet(ctx));
      const p = await page(ctx, { external_user_id: ctx.tag, limit: 100, order: 'asc' });
      ctx.check(
        p.data.every((c) => c.external_user_id === ctx.tag),
        'a conversation of another user is listed',
        p.ex,
      );
      ctx.check(
        set.every((id) => p.data.some((c) => c.id === id)),
        "a conversation of the run's user is missing",
        p.ex,
      );
      const none = await page(ctx, { external_user_id: `${ctx.tag}-nobody` });
      ctx.equal(none.data, [], 'conversations of a user who has none', none.ex);
    },
  },
]);

export const listLimits: CaseDef[] = defineCases('8', [
  {
    id: 'S8-list-limit-0',
    level: 'MUST',
    clauses: ['§8.list-limit', 'D-12'],
    description: 'limit=0 (below 1) is refused with a 4xx error object or never yields more than 100 (reference: 400 param limit)',
    async run(ctx) {
      await walkSet(ctx);
      await outOfRange(ctx, '0');
    },
  },
  {
    id: 'S8-list-limit-101',
    level: 'MUST',
    clauses: ['§8.list-limit', 'D-12'],
    description: 'limit=101 (past 100) is refused with a 4xx error object or yields at most 100 (reference: 400 param limit)',
    async run(ctx) {
      await walkSet(ctx);
      // Enough conversations that an unenforced limit shows.
      const p = await page(ctx, { limit: 100 });
      for (let i = p.data.length; i < 101 && !p.has_more; i++) await createConversation(ctx);
      await outOfRange(ctx, '101');
    },
  },
]);

/**
 * The 4th newest conversation and the three after it in asc order. Reference: the run's own (D-7);
 * spec: the end of the whole asc list as the implementation orders it.
 */
async function newestThree(ctx: CaseContext): Promise<{ cursor: string; rest: string[] }> {
  const asc = ctx.reference ? idsOf(await walkSet(ctx)) : await observed(ctx, 'asc');
  return { cursor: asc.at(-4)!, rest: asc.slice(-3) };
}

async function outOfRange(ctx: CaseContext, limit: string): Promise<void> {
  const ex = await ctx.send({ method: 'GET', path: `${convPath(ctx.target.appId)}?limit=${limit}` });
  if (ctx.reference || ex.status !== 200) {
    ctx.invalid(ex, `limit=${limit}`, { param: 'limit', code: 'invalid_value' });
    return;
  }
  const l = ctx.ok(ex, ctx.schemas.list, `limit=${limit}`);
  ctx.check(l.data.length <= 100, `limit=${limit} returned ${l.data.length} conversations`, ex);
}
