// D-74 on PostgreSQL, two instances of one database: each reply's debit is a column of its usage
// row, written in the transaction that writes the usage (and a completion's Idempotency-Key claim), so
// that a transaction that fails leaves neither; the per-day rollup and the balance are sums over the
// rows, the same on every instance; a hard-limit plan at zero is refused on the instance that spent the
// credits at once and on the other within its balance's refresh interval. The file store's twin:
// test/credits.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import postgres, { type Sql } from 'postgres';
import type { PlanT } from '../../src/core/tenants.ts';
import { BALANCE_REFRESH_MS } from '../../src/services/credits.ts';
import { adminGet, adminToken } from '../support/admin-token.ts';
import { draft } from '../support/control-suite.ts';
import { APP, startTestServer, type TestServer } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

const conv = `/apps/${APP}/conversations`;
let url: string;
let sql: Sql;
let a: TestServer;
let b: TestServer;
let tokenA: string;
let tokenB: string;

before(async () => {
  url = await freshDatabase();
  a = await startTestServer({ databaseUrl: url, passwordHashCost: 10 });
  b = await startTestServer({ databaseUrl: url, passwordHashCost: 10 });
  sql = postgres(url, { max: 2, onnotice: () => {} });
  tokenA = await adminToken(a.baseUrl);
  tokenB = await adminToken(b.baseUrl);
});
after(async () => {
  await Promise.allSettled([a?.close(), b?.close()]);
  await sql?.end();
});

/** Waits (at most 30 s) until `check` holds. */
async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + 30_000;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`waited 30 s for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Sets every plan's credits on instance A and waits until B has the change (D-78). */
async function setCredits(credits: PlanT['credits']): Promise<void> {
  const doc = await a.control.apply((d) => {
    for (const p of d.plans) p.credits = { ...credits };
    return [draft('team_demo', 'plan.updated')];
  });
  await until('instance B to read the change', async () => b.control.read().version >= doc.version);
}

const rows = async () =>
  sql<{ kind: string; id: string; team_id: string | null; millicredits: string; input_tokens: number; output_tokens: number }[]>`
    SELECT kind, id, team_id, millicredits, input_tokens, output_tokens FROM usage_entries ORDER BY at, kind DESC, id`;

describe('D-74 on PostgreSQL', () => {
  test('a reply and a completion debit their team in their usage row; every instance shows the same rollup and balance', async () => {
    await setCredits({ monthly_allowance: 10_000, price_per_1k_tokens: 3, limit: 'soft' });
    const c = (await a.call('POST', conv, {})).body;
    const reply = await a.call('POST', `${conv}/${c.id}`, { message: { content: 'What are credits?' } });
    const completion = await b.call('POST', `/apps/${APP}/completions`, { prompt: 'Summarise billing' });
    assert.equal(reply.status, 200);
    assert.equal(completion.status, 200);
    const debits = [reply.body.usage.total_tokens * 3, completion.body.usage.total_tokens * 3];
    assert.deepEqual(
      (await rows()).map((r) => [r.kind, r.id, r.team_id, Number(r.millicredits)]),
      [
        ['response', reply.body.id, 'team_demo', debits[0]],
        ['completion', completion.body.id, 'team_demo', debits[1]],
      ],
    );
    // Rows of other days, one written before D-74 (no debit): the rollup sums them per app and day.
    const old = Math.floor(Date.now() / 86_400_000) - 40;
    await sql`INSERT INTO usage_entries (app_id, kind, id, at, input_tokens, output_tokens, team_id, millicredits) VALUES
      (${APP}, 'response', 'resp_old_1', ${old * 86_400 + 10}, 10, 20, 'team_demo', 90),
      (${APP}, 'completion', 'cmpl_old_1', ${old * 86_400 + 20}, 1, 2, 'team_demo', 9),
      ('app_other', 'response', 'resp_old_2', ${old * 86_400 + 30}, 5, 5, 'team_other', 30)`;
    await sql`INSERT INTO usage_entries (app_id, kind, id, at, input_tokens, output_tokens) VALUES
      ('app_stream', 'response', 'resp_old_3', ${old * 86_400 + 40}, 4, 4)`;
    const date = (d: number) => new Date(d * 86_400_000).toISOString().slice(0, 10);
    const today = new Date().toISOString().slice(0, 10);
    const [ra, rb] = await Promise.all([
      adminGet(a.baseUrl, tokenA, `/usage?since=${date(old)}&until=${today}`),
      adminGet(b.baseUrl, tokenB, `/usage?since=${date(old)}&until=${today}`),
    ]);
    assert.equal(ra.status, 200, JSON.stringify(ra.body));
    assert.deepEqual(ra.body, rb.body, 'every instance answers alike');
    const used = (debits[0]! + debits[1]!) / 1000;
    assert.deepEqual(ra.body.data, [
      { app_id: APP, date: date(old), requests: 2, input_tokens: 11, output_tokens: 22, total_tokens: 33, credits: 0.099 },
      { app_id: 'app_stream', date: date(old), requests: 1, input_tokens: 4, output_tokens: 4, total_tokens: 8, credits: 0 },
      {
        app_id: APP,
        date: today,
        requests: 2,
        input_tokens: reply.body.usage.input_tokens + completion.body.usage.input_tokens,
        output_tokens: reply.body.usage.output_tokens + completion.body.usage.output_tokens,
        total_tokens: reply.body.usage.total_tokens + completion.body.usage.total_tokens,
        credits: used,
      },
    ]);
    assert.equal(ra.body.balance.used, used, 'the month’s debits only');
    await sql`DELETE FROM usage_entries WHERE id LIKE '%_old_%'`;
  });

  test('a failed transaction leaves neither the usage nor the debit', async () => {
    // The completion's claim is the last write of its transaction: make it fail there.
    await sql.unsafe(`
      CREATE FUNCTION refuse_claim() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'disk on fire'; END $$;
      CREATE TRIGGER refuse_claim BEFORE INSERT ON idempotency_claims FOR EACH ROW EXECUTE FUNCTION refuse_claim();`);
    try {
      const before = await adminGet(a.baseUrl, tokenA, '/credits');
      const n = (await rows()).length;
      const r = await a.call(
        'POST',
        `/apps/${APP}/completions`,
        { prompt: 'Summarise billing' },
        { headers: { 'idempotency-key': 'k-fail' } },
      );
      assert.notEqual(r.body.status, 'completed', 'the completion could not be saved');
      assert.equal((await rows()).length, n, 'no usage row');
      assert.deepEqual(await adminGet(a.baseUrl, tokenA, '/credits'), before, 'no debit');
    } finally {
      await sql.unsafe('DROP TRIGGER refuse_claim ON idempotency_claims; DROP FUNCTION refuse_claim();');
    }
  });

  test('at zero on a hard plan: refused at once where the credits were spent, and on the other instance within its refresh interval', async () => {
    const spent = Number(
      (await sql<{ mc: string }[]>`SELECT coalesce(sum(millicredits), 0) AS mc FROM usage_entries WHERE team_id = 'team_demo'`)[0]!.mc,
    );
    const apps = a.control.read().apps.filter((x) => x.team_id === 'team_demo').length;
    // Room for a few replies beyond what was spent.
    const perApp = Math.ceil((spent + 600) / apps) / 1000;
    await setCredits({ monthly_allowance: perApp, price_per_1k_tokens: 1, limit: 'hard' });
    const c = (await a.call('POST', conv, {})).body;
    // B reads the team's balance (above zero) and keeps it.
    assert.equal((await b.call('POST', `/apps/${APP}/completions`, { prompt: 'hi' })).status, 200);
    let replies = 0;
    for (;;) {
      const r = await a.call('POST', `${conv}/${c.id}`, { message: { content: 'Tell me about credits and billing, please.' } });
      if (r.status === 429) {
        assert.equal(r.body.error.code, 'credits_exhausted');
        assert.equal(r.headers.get('x-should-retry'), 'false');
        break;
      }
      assert.equal(r.status, 200);
      replies++;
      assert.ok(replies < 100, 'the balance reaches zero');
    }
    // By design within BALANCE_REFRESH_MS (${BALANCE_REFRESH_MS} ms) of A's last debit (B's replies meanwhile
    // take the balance lower: at most the replies a stale balance lets start); the wait is bounded at 30 s.
    await until(`instance B to refuse too (its balance is refreshed every ${BALANCE_REFRESH_MS} ms)`, async () => {
      return (await b.call('POST', `/apps/${APP}/completions`, { prompt: 'hi' })).status === 429;
    });
    const history = (await a.call('GET', `${conv}/${c.id}`)).body;
    const n = (await rows()).length;
    for (const s of [a, b]) {
      const r = await s.call('POST', `${conv}/${c.id}`, { message: { content: 'again' }, metadata: { page: 'x' } });
      assert.equal(r.status, 429);
    }
    assert.deepEqual((await a.call('GET', `${conv}/${c.id}`)).body, history, 'refusals change nothing');
    assert.equal((await rows()).length, n);
    const balance = await adminGet(b.baseUrl, tokenB, '/credits');
    assert.ok(balance.body.credits <= 0);
    assert.equal(balance.body.limit, 'hard');
  });
});
