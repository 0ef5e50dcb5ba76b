// D-74 on the file store: each response and completion debits its team in its own usage line (priced
// by its app's plan); /admin/v1/usage sums usage and credits per app per UTC day and /admin/v1/credits
// shows the month's balance; at zero a hard-limit plan refuses replies (429 credits_exhausted, nothing
// else changes) and a soft one only warns; a debit lands with its usage line or not at all.
// PostgreSQL: test/proof/pg-credits.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import type { UsageT } from '../src/contract/index.ts';
import { dayOf, monthOf } from '../src/core/credits.ts';
import type { ControlDocT } from '../src/core/control.ts';
import type { AppT, PlanT, Tenants } from '../src/core/tenants.ts';
import { CreditService } from '../src/services/credits.ts';
import type { UsageLedger } from '../src/store/shared.ts';
import { adminGet, adminToken as memberToken } from './support/admin-token.ts';
import { hashPassword } from '../src/services/admin/passwords.ts';
import { draft } from './support/control-suite.ts';
import { SHOP, visitor, widgetCall } from './support/widget.ts';
import { injectDiskFault } from './support/faulty-fs.ts';
import { APP, ON_POSTGRES, OTHER_TEAM_KEY, startTestServer, tempDir, type TestServer } from './support/helpers.ts';

const FILES_ONLY = { skip: ON_POSTGRES && 'the file store: test/proof/pg-credits.test.ts proves PostgreSQL' };
const conv = `/apps/${APP}/conversations`;
const adminToken = (s: TestServer) => memberToken(s.baseUrl);
const admin = (s: TestServer, t: string, p: string) => adminGet(s.baseUrl, t, p);

/** Sets every plan's credits (the team's allowance is the sum over its apps' plans). */
async function setCredits(s: TestServer, credits: PlanT['credits']): Promise<void> {
  await s.control.apply((d) => {
    for (const p of d.plans) p.credits = { ...credits };
    return [draft('team_demo', 'plan.updated')];
  });
}

function teamApps(doc: ControlDocT, team = 'team_demo'): number {
  return doc.apps.filter((a) => a.team_id === team).length;
}

async function usageLines(dir: string): Promise<any[]> {
  const text = await fs.readFile(path.join(dir, 'usage.jsonl'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

async function send(s: TestServer, id: string, content = 'What are credits?') {
  return s.call('POST', `${conv}/${id}`, { message: { content } });
}

describe('D-74: debits and the balance', () => {
  let s: TestServer;
  let demoToken: string;
  before(async () => {
    s = await startTestServer({ passwordHashCost: 10 });
    demoToken = await adminToken(s);
  });
  after(() => s?.close());

  test('a reply and a completion each debit their team at their app plan’s price, in their usage record', async () => {
    await s.control.apply((d) => {
      d.plans.find((p) => p.id === 'developer')!.credits.price_per_1k_tokens = 2.5;
      return [draft('team_demo', 'plan.updated')];
    });
    const before = await admin(s, demoToken, '/credits');
    assert.equal(before.status, 200);
    const apps = teamApps(s.control.read());
    assert.equal(before.body.object, 'credit_balance');
    assert.equal(before.body.allowance, 10_000 * apps, 'each app brings its plan’s allowance');
    assert.equal(before.body.used, 0);
    assert.equal(before.body.credits, before.body.allowance);
    assert.equal(before.body.limit, 'soft');
    const on = (plan: string) => s.control.read().apps.filter((a) => a.team_id === 'team_demo' && a.plan === plan).length;
    assert.deepEqual(before.body.plans, [
      { plan: 'developer', apps: on('developer'), monthly_allowance: 10_000, price_per_1k_tokens: 2.5, limit: 'soft' },
      { plan: 'limited', apps: on('limited'), monthly_allowance: 10_000, price_per_1k_tokens: 1, limit: 'soft' },
      { plan: 'tiny', apps: on('tiny'), monthly_allowance: 10_000, price_per_1k_tokens: 1, limit: 'soft' },
    ]);
    const { start, end } = monthOf(Date.now());
    assert.deepEqual([before.body.period_start, before.body.period_end], [start, end]);

    const c = (await s.call('POST', conv, {})).body;
    const reply = await send(s, c.id);
    assert.equal(reply.status, 200);
    const completion = await s.call('POST', `/apps/${APP}/completions`, { prompt: 'Summarise billing' });
    assert.equal(completion.status, 200);
    const tokens = [reply.body.usage.total_tokens, completion.body.usage.total_tokens] as number[];
    assert.ok(tokens.every((t) => t > 0));

    // The file store's lines (PostgreSQL's rows: test/proof/pg-credits.test.ts).
    if (!ON_POSTGRES)
      assert.deepEqual(
        (await usageLines(s.dataDir)).map((l) => [l.kind, l.id, l.team_id, l.millicredits]),
        [
          ['response', reply.body.id, 'team_demo', Math.round(tokens[0]! * 2.5)],
          ['completion', completion.body.id, 'team_demo', Math.round(tokens[1]! * 2.5)],
        ],
        'one line each: usage and debit in one record',
      );
    const used = (Math.round(tokens[0]! * 2.5) + Math.round(tokens[1]! * 2.5)) / 1000;
    const now = await admin(s, demoToken, '/credits');
    assert.equal(now.body.used, used);
    assert.equal(now.body.credits, before.body.allowance - used);

    // The per-day rollup of today: the app's one row sums both.
    const today = new Date().toISOString().slice(0, 10);
    const report = await admin(s, demoToken, `/usage?app_id=${APP}`);
    assert.equal(report.status, 200);
    assert.equal(report.body.object, 'usage');
    assert.deepEqual(report.body.data, [
      {
        app_id: APP,
        date: today,
        requests: 2,
        input_tokens: reply.body.usage.input_tokens + completion.body.usage.input_tokens,
        output_tokens: reply.body.usage.output_tokens + completion.body.usage.output_tokens,
        total_tokens: tokens[0]! + tokens[1]!,
        credits: used,
      },
    ]);
    assert.deepEqual(report.body.balance, now.body);
  });

  test('a member sees their own team only (a viewer too): another team’s balance and usage are its own', async () => {
    const hash = await hashPassword('other-viewer-password', 10);
    await s.control.apply((d) => {
      d.members.push({
        id: 'mem_other_viewer',
        team_id: 'team_other',
        email: 'viewer@other.example',
        name: null,
        role: 'viewer',
        created_at: 0,
        password_hash: hash,
        invite: null,
        last_sign_in_at: null,
      });
      return [draft('team_other', 'member.added')];
    });
    const other = await memberToken(s.baseUrl, { email: 'viewer@other.example', password: 'other-viewer-password' });
    const c = (await s.call('POST', '/apps/app_other/conversations', {}, { key: OTHER_TEAM_KEY })).body;
    const r = await s.call('POST', `/apps/app_other/conversations/${c.id}`, { message: { content: 'hi' } }, { key: OTHER_TEAM_KEY });
    const balance = await admin(s, other, '/credits');
    assert.equal(balance.status, 200);
    assert.equal(balance.body.team_id, 'team_other');
    assert.equal(balance.body.allowance, 10_000, 'one app on one plan');
    assert.equal(balance.body.used, (r.body.usage.total_tokens * 2.5) / 1000);
    const usage = await admin(s, other, '/usage');
    assert.deepEqual(
      usage.body.data.map((d: any) => d.app_id),
      ['app_other'],
    );
    assert.equal((await admin(s, other, `/usage?app_id=${APP}`)).status, 404);
    const demo = await admin(s, demoToken, '/usage');
    assert.ok(!demo.body.data.some((d: any) => d.app_id === 'app_other'), 'nor does the demo team see it');
  });

  test('bad usage queries are 400 with their param and another team’s app is 404', async () => {
    const cases: Array<[string, number, string]> = [
      ['/usage?since=2026-02-30', 400, 'since'],
      ['/usage?until=yesterday', 400, 'until'],
      ['/usage?since=2026-03-02&until=2026-03-01', 400, 'since'],
      ['/usage?since=2024-01-01&until=2025-06-01', 400, 'until'],
      ['/usage?app=app_demo', 400, 'app'],
      ['/usage?app_id=app_other', 404, 'app_id'],
      ['/usage?app_id=app_nope', 404, 'app_id'],
    ];
    for (const [p, status, param] of cases) {
      const r = await admin(s, demoToken, p);
      assert.equal(r.status, status, p);
      assert.equal(r.body.error.param, param, p);
    }
  });
});

describe('D-74: usage per app per UTC day', FILES_ONLY, () => {
  test('sums per app and day within since/until, the team’s apps only; the balance counts this month’s debits only', async () => {
    const dir = await tempDir();
    const today = dayOf(Date.now() / 1000);
    const old = today - 40; // always before this month
    const line = (app: string, team: string | undefined, day: number, i: number, o: number, mc?: number, n = 0) => ({
      t: 'usage',
      app_id: app,
      kind: 'response',
      id: `resp_seed_${app}_${day}_${n}`,
      at: day * 86_400 + 3_600 + n,
      input_tokens: i,
      output_tokens: o,
      ...(team ? { team_id: team, millicredits: mc } : {}),
    });
    const seeded = [
      line(APP, 'team_demo', old, 10, 20, 30),
      line(APP, 'team_demo', old, 1, 2, 3, 1),
      line('app_stream', undefined, old, 5, 5), // written before D-74: tokens, no debit
      line(APP, 'team_demo', old + 1, 100, 200, 300),
      line('app_other', 'team_other', old, 7, 7, 14),
      line(APP, 'team_demo', today, 50, 50, 100),
    ];
    await fs.writeFile(path.join(dir, 'usage.jsonl'), `${seeded.map((l) => JSON.stringify(l)).join('\n')}\n`);
    const s = await startTestServer({ dataDir: dir, passwordHashCost: 10 });
    try {
      const token = await adminToken(s);
      const date = (d: number) => new Date(d * 86_400_000).toISOString().slice(0, 10);
      const r = await admin(s, token, `/usage?since=${date(old)}&until=${date(old + 1)}`);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual([r.body.since, r.body.until], [date(old), date(old + 1)]);
      assert.deepEqual(r.body.data, [
        { app_id: APP, date: date(old), requests: 2, input_tokens: 11, output_tokens: 22, total_tokens: 33, credits: 0.033 },
        { app_id: 'app_stream', date: date(old), requests: 1, input_tokens: 5, output_tokens: 5, total_tokens: 10, credits: 0 },
        { app_id: APP, date: date(old + 1), requests: 1, input_tokens: 100, output_tokens: 200, total_tokens: 300, credits: 0.3 },
      ]);
      const one = await admin(s, token, `/usage?app_id=app_stream&since=${date(old)}&until=${date(today)}`);
      assert.deepEqual(
        one.body.data.map((d: any) => d.app_id),
        ['app_stream'],
      );
      // By default: this month, up to today.
      const month = await admin(s, token, '/usage');
      assert.deepEqual(
        month.body.data.map((d: any) => [d.app_id, d.date, d.credits]),
        [[APP, date(today), 0.1]],
      );
      assert.equal(month.body.balance.used, 0.1, 'only this month’s debits count');
    } finally {
      await s.close();
    }
  });
});

describe('D-74: at zero', () => {
  test('a hard-limit plan refuses replies with 429 credits_exhausted and nothing else changes', async () => {
    const s = await startTestServer({ passwordHashCost: 10 });
    try {
      // A thousandth of a credit per app: the first reply runs and takes the balance below zero.
      await setCredits(s, { monthly_allowance: 0.001, price_per_1k_tokens: 1, limit: 'hard' });
      const c = (await s.call('POST', conv, {})).body;
      const first = await send(s, c.id);
      assert.equal(first.status, 200, 'a balance above zero lets a reply start');

      const record = (await s.call('GET', `${conv}/${c.id}`)).body;
      const usage = await s.usage.of(APP);
      const lines = (await usageLines(s.dataDir)).length;
      const refused = await s.call('POST', `${conv}/${c.id}`, { message: { content: 'again' }, metadata: { page: 'x' } });
      assert.equal(refused.status, 429);
      assert.deepEqual(refused.body.error.type, 'rate_limit_exceeded');
      assert.equal(refused.body.error.code, 'credits_exhausted');
      assert.equal(refused.body.error.param, null);
      assert.match(refused.body.error.message, /credits for \d{4}-\d{2} are used up/);
      assert.equal(refused.headers.get('x-should-retry'), 'false');
      assert.equal(refused.headers.get('retry-after'), null, 'waiting a little frees nothing');
      assert.equal(refused.headers.get('x-ratelimit-remaining-requests'), null, 'refused before the plan counts it');
      const completion = await s.call('POST', `/apps/${APP}/completions`, { prompt: 'hello' });
      assert.equal(completion.status, 429);
      assert.equal(completion.body.error.code, 'credits_exhausted');
      const stream = await s.call('POST', `${conv}/${c.id}`, { message: { content: 'again' }, stream: true });
      assert.equal(stream.status, 429);

      assert.deepEqual((await s.call('GET', `${conv}/${c.id}`)).body, record, 'the conversation is as it was');
      assert.deepEqual(await s.usage.of(APP), usage);
      assert.equal((await usageLines(s.dataDir)).length, lines);
      // The widget's send message too (its budget's charge given back, as for its other refusals).
      const v = await visitor(s, APP);
      const wconv = await widgetCall(s, 'POST', `/apps/${APP}/conversations`, { auth: v.token, body: {} });
      assert.equal(wconv.status, 200, 'the widget creates conversations: no agent runs');
      const w = await widgetCall(s, 'POST', `/apps/${APP}/conversations/${wconv.body.id}`, {
        auth: v.token,
        body: { message: { content: 'hi' }, stream: false },
      });
      assert.equal(w.status, 429);
      assert.equal(w.body.error.code, 'credits_exhausted');
      assert.equal(w.headers.get('access-control-allow-origin'), SHOP);
      // What runs no agent is not refused; nor is another team, whose balance is its own.
      assert.equal((await s.call('POST', conv, {})).status, 200);
      const other = (await s.call('POST', '/apps/app_other/conversations', {}, { key: OTHER_TEAM_KEY })).body;
      const otherReply = await s.call(
        'POST',
        `/apps/app_other/conversations/${other.id}`,
        { message: { content: 'hi' } },
        { key: OTHER_TEAM_KEY },
      );
      assert.equal(otherReply.status, 200);

      // A larger allowance lets replies run again at once.
      await setCredits(s, { monthly_allowance: 100, price_per_1k_tokens: 1, limit: 'hard' });
      assert.equal((await send(s, c.id, 'and now?')).status, 200);
    } finally {
      await s.close();
    }
  });

  test('a soft-limit plan (the fixtures’) lets replies run with a warning header and one log line per team', async () => {
    const logged: any[] = [];
    const sink = new Writable({
      write(chunk, _enc, done) {
        for (const l of String(chunk).split('\n')) if (l.trim()) logged.push(JSON.parse(l));
        done();
      },
    });
    const s = await startTestServer({ logger: pino({ level: 'warn' }, sink) });
    try {
      const fixtures = s.control.read().plans.map((p) => p.credits.limit);
      assert.ok(
        fixtures.every((l) => l === 'soft'),
        'the fixtures never stop',
      );
      await setCredits(s, { monthly_allowance: 0.001, price_per_1k_tokens: 1, limit: 'soft' });
      const c = (await s.call('POST', conv, {})).body;
      const first = await send(s, c.id);
      assert.equal(first.headers.get('parley-credits-warning'), null, 'no warning above zero');
      for (const content of ['two', 'three']) {
        const r = await send(s, c.id, content);
        assert.equal(r.status, 200);
        assert.match(
          r.headers.get('parley-credits-warning') ?? '',
          /^credits exhausted for \d{4}-\d{2} \(balance -[\d.,]+ of [\d.,]+ credits\); the plan's limit is soft/,
        );
      }
      const completion = await s.call('POST', `/apps/${APP}/completions`, { prompt: 'hello' });
      assert.equal(completion.status, 200);
      assert.ok(completion.headers.get('parley-credits-warning'));
      const warnings = logged.filter((l) => /used its credits/.test(l.msg));
      assert.equal(warnings.length, 1, 'one line per team and month');
      assert.equal(warnings[0].team_id, 'team_demo');
    } finally {
      await s.close();
    }
  });
});

describe('D-74: a debit lands with its usage record or not at all', FILES_ONLY, () => {
  test('a usage line cut short by a crash takes its debit with it', async () => {
    const dir = await tempDir();
    let s = await startTestServer({ dataDir: dir, passwordHashCost: 10 });
    try {
      const c = (await s.call('POST', conv, {})).body;
      await send(s, c.id);
      await send(s, c.id, 'once more');
      await s.close();
      // What a kill -9 in the middle of the last append leaves.
      const file = path.join(dir, 'usage.jsonl');
      const text = await fs.readFile(file, 'utf8');
      const lines = text.trimEnd().split('\n');
      await fs.writeFile(file, `${lines[0]}\n${lines[1]!.slice(0, 40)}`);
      s = await startTestServer({ dataDir: dir, passwordHashCost: 10 });
      const token = await adminToken(s);
      const kept = JSON.parse(lines[0]!);
      assert.equal((await admin(s, token, '/credits')).body.used, kept.millicredits / 1000);
      assert.equal((await s.usage.of(APP)).requests, 1, 'the usage went with it');
    } finally {
      await s.close();
    }
  });

  test('a usage line that cannot be written debits nothing, then or after a restart', async () => {
    const dir = await tempDir();
    let s = await startTestServer({ dataDir: dir, passwordHashCost: 10 });
    const fault = await injectDiskFault();
    try {
      const token = await adminToken(s);
      const c = (await s.call('POST', conv, {})).body;
      fault.full = true;
      const r = await s.call('POST', `/apps/${APP}/completions`, { prompt: 'Summarise billing' });
      fault.full = false;
      assert.ok(fault.refused > 0, 'the usage line met the fault');
      assert.equal(r.body.status ?? r.body.error?.type, r.status === 200 ? 'failed' : 'internal_error');
      assert.equal((await admin(s, token, '/credits')).body.used, 0);
      const ok = await send(s, c.id);
      const debit = Math.round(ok.body.usage.total_tokens) / 1000;
      assert.equal((await admin(s, token, '/credits')).body.used, debit);
      await s.close();
      s = await startTestServer({ dataDir: dir, passwordHashCost: 10 });
      assert.equal((await admin(s, await adminToken(s), '/credits')).body.used, debit, 'the same after a restart');
    } finally {
      fault.full = false;
      fault.restore();
      await s.close();
    }
  });
});

describe('D-74: the cached balance', () => {
  /** A ledger whose team sums another instance moves. */
  function fakeLedger(sums: Map<string, number>): UsageLedger {
    return {
      record: async () => {},
      of: async () => ({ requests: 0, input_tokens: 0, output_tokens: 0, total_tokens: 0, credits: 0 }),
      debited: async (team) => sums.get(team) ?? 0,
      days: async () => [],
      close: async () => {},
    };
  }
  const plan = (limit: 'soft' | 'hard', allowance: number): PlanT =>
    ({
      id: 'p',
      requests_per_minute: 1,
      requests_per_day: 1,
      storage_bytes: 1,
      conversation_bytes: 1,
      credits: { monthly_allowance: allowance, price_per_1k_tokens: 1, limit },
    }) as PlanT;
  const app = { id: 'app_a', team_id: 'team_a', plan: 'p' } as AppT;
  const tenants = (p: PlanT): Pick<Tenants, 'apps' | 'plans' | 'version'> => ({
    apps: new Map([['app_a', app]]),
    plans: new Map([['p', p]]),
    version: 1,
  });
  const usage = (n: number): UsageT => ({ input_tokens: n, output_tokens: 0, total_tokens: n });

  test('read once per team, then from memory; its own debits at once, another instance’s within the refresh interval; a new month starts afresh', async () => {
    const sums = new Map([['team_a', 500]]);
    let now = Date.UTC(2026, 10, 30, 23, 59, 0);
    const credits = new CreditService(fakeLedger(sums), tenants(plan('hard', 1)), pino({ level: 'silent' }), {
      refreshMs: 1000,
      now: () => now,
    });
    const first = credits.admit(app);
    assert.ok(first instanceof Promise, 'the first request of a team reads the store');
    assert.deepEqual(await first, {});
    assert.deepEqual(credits.admit(app), {}, 'then memory, synchronously');

    // This instance's debit: at once.
    await credits.meter().record('app_a', 'completion', 'cmpl_1', usage(500));
    assert.throws(() => credits.admit(app), { code: 'credits_exhausted' });

    // Another instance's debits (or a correction) move the store's sum: seen after the refresh interval.
    sums.set('team_a', 100);
    assert.throws(() => credits.admit(app), 'still the cached sum');
    now += 1000;
    assert.throws(() => credits.admit(app), 'this request reads the cache; it starts a refresh');
    await new Promise<void>((resolve) => setImmediate(resolve));
    assert.deepEqual(credits.admit(app), {}, 'the refreshed sum');

    // December: the month's debits are read anew.
    sums.set('team_a', 0);
    now = Date.UTC(2026, 11, 1, 0, 0, 1);
    assert.deepEqual(await credits.admit(app), {});
    const b = await credits.balance('team_a');
    assert.deepEqual([b.period_start, b.period_end], [Date.UTC(2026, 11, 1) / 1000, Date.UTC(2027, 0, 1) / 1000]);
  });
  test('replies arriving during the first read wait for it; a debit landing meanwhile is kept', async () => {
    let release: (n: number) => void = () => {};
    const ledger: UsageLedger = { ...fakeLedger(new Map()), debited: () => new Promise<number>((r) => (release = r)) };
    const credits = new CreditService(ledger, tenants(plan('hard', 1)), pino({ level: 'silent' }));
    const first = credits.admit(app);
    const second = credits.admit(app);
    assert.ok(first instanceof Promise && second instanceof Promise, 'both wait for the one read');
    await credits.meter().record('app_a', 'response', 'resp_1', usage(1000));
    release(0);
    // The store's sum (read before the debit landed) is 0; the debit is kept beside it.
    await assert.rejects(first, { code: 'credits_exhausted' });
    await assert.rejects(second, { code: 'credits_exhausted' });
    assert.throws(() => credits.admit(app), { code: 'credits_exhausted' }, 'and stays, from memory');
  });
});
