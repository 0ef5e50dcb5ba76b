// The dashboard's details in Chromium (docs/dashboard.md, D-154, D-155): confirmations that open on Cancel,
// a role change asked first, errors at their fields, rolled keys that say which replaced which, the keys
// at a phone's width, the usage chart's axes, the delivery log to the second, a test event sent (D-129),
// an invitation link opened while signed in, and the credits banner. Its own server: fixtures whose credits run out in a few calls.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { adminToken } from '../support/admin-token.ts';
import { chromiumMissing, editedFixtures, launch } from '../support/browser.ts';
import { axe, focused, signIn } from '../support/dashboard-page.ts';
import { Webhook } from 'standardwebhooks';
import { webhookSecretText, webhookSigningKey } from '../../src/core/api-keys.ts';
import { APP, KEY, startTestServer, type TestServer } from '../support/helpers.ts';
import { type Receiver, startReceiver } from '../support/webhook-receiver.ts';

const skip = chromiumMissing();
/** Every plan's allowance is this small (credits), so that a few dozen completions spend it (D-74). */
const ALLOWANCE = 0.05;

let parley: TestServer;
let context: BrowserContext;
let origin: string;
let token: string;
let rx: Receiver;
let page: Page;

before(async () => {
  if (skip) return;
  const fixturesDir = await editedFixtures((f) => {
    for (const p of f.plans) {
      p.credits.monthly_allowance = ALLOWANCE;
      p.credits.price_per_1k_tokens = 0.05;
    }
    // One plan refuses at zero, so that the page says both rules (app_limited is on it).
    f.plans.find((p: { id: string }) => p.id === 'limited').credits.limit = 'hard';
  });
  parley = await startTestServer({ fixturesDir, webhookPollMs: 50, webhookRetrySchedule: [1.2], passwordHashCost: 10 });
  origin = new URL(parley.baseUrl).origin;
  token = await adminToken(parley.baseUrl);
  rx = await startReceiver();
  context = await launch();
  // The key dialog's Copy writes to the clipboard, as a person's browser lets it.
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
  page = await context.newPage();
  await page.goto(`${origin}/dashboard`);
  await signIn(page);
  await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
});

after(async () => {
  await context?.close().catch(() => {});
  await parley?.close();
  await rx?.close();
});

/** `/admin/v1` with the demo admin's token. */
async function admin(method: string, p: string, body?: unknown): Promise<any> {
  const res = await fetch(`${origin}/admin/v1${p}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  assert.ok(res.ok, `${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

/** Opens a page, drawn afresh (going to the URL it is at already changes nothing: it is loaded again). */
async function go(hash: string): Promise<void> {
  const url = `${origin}/dashboard${hash}`;
  if (page.url() === url) await page.reload();
  else await page.goto(url);
  await page.locator(`main .page[aria-busy="false"][data-route="${hash}"]`).waitFor();
}

describe('the dashboard in Chromium: its details (D-154, D-155)', { skip }, () => {
  test('D-155: after Copy, focus stays on the Copy button, not in the key field', async () => {
    await page.getByLabel('Name').fill('copy key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const dialog = page.getByRole('dialog', { name: 'Your new key' });
    await dialog.getByRole('button', { name: 'Copy key' }).press('Enter');
    await dialog.getByText('Copied to the clipboard.').waitFor();
    assert.equal((await focused(page)).text, 'Copy key');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
  });

  test('D-155: a revoke opens with focus on Cancel, so that Enter, Enter keeps the key', async () => {
    const row = page.getByRole('row').filter({ hasText: 'copy key' });
    await row.getByRole('button', { name: 'Revoke copy key' }).press('Enter');
    const confirm = page.getByRole('dialog', { name: 'Revoke copy key?' });
    await confirm.waitFor();
    assert.equal((await focused(page)).text, 'Cancel');
    await page.keyboard.press('Enter');
    await confirm.waitFor({ state: 'detached' });
    const keys = await admin('GET', '/keys');
    assert.equal(keys.data.find((k: { name: string }) => k.name === 'copy key').revoked_at, null, 'the key is kept');
  });

  test('a rolled key and its replacement say which replaced which', async () => {
    await page.getByRole('row').filter({ hasText: 'copy key' }).getByRole('button', { name: 'Roll copy key' }).click();
    await page.getByRole('dialog', { name: 'Roll copy key' }).getByRole('button', { name: 'Roll key' }).click();
    const shown = page.getByRole('dialog', { name: 'New key for copy key' });
    await shown.getByRole('button', { name: 'Done' }).click();
    await shown.waitFor({ state: 'detached' });
    const keys = (await admin('GET', '/keys')).data.filter((k: { name: string }) => k.name === 'copy key');
    const old = keys.find((k: { rolled_to: string | null }) => k.rolled_to !== null);
    const fresh = keys.find((k: { id: string }) => k.id === old.rolled_to);
    const rowOf = (k: { redacted: string }) => page.getByRole('row').filter({ has: page.getByRole('cell', { name: k.redacted }) });
    await rowOf(old).getByText(`replaced by ${fresh.redacted}`).waitFor();
    await rowOf(fresh).getByText(`replaces ${old.redacted}`).waitFor();
  });

  test("at 360 px a key's Roll and Revoke are in view, and the page does not scroll sideways", async () => {
    await page.setViewportSize({ width: 360, height: 800 });
    await go('#/keys');
    const revoke = page.getByRole('button', { name: 'Revoke Demo secret key' });
    await revoke.scrollIntoViewIfNeeded();
    const box = await revoke.boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 360, `Revoke is in view: ${JSON.stringify(box)}`);
    const sideways = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(sideways <= 0, `the page scrolls sideways by ${sideways}px`);
    const wrap = await page.getByRole('region', { name: 'API keys' }).evaluate((el) => el.scrollWidth - el.clientWidth);
    assert.ok(wrap <= 0, `the keys scroll sideways inside their region by ${wrap}px`);
    await page.screenshot({ path: path.resolve(import.meta.dirname, '../../test-artifacts/dashboard-keys-cards-360.png'), fullPage: true });
    assert.deepEqual(await axe(page), []);
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  test('D-155: a role change is confirmed, naming the member and the role; Cancel keeps the old role shown', async () => {
    const added = await admin('POST', '/members', { email: 'second@demo.example', role: 'viewer', password: 'second-password-1' });
    await go('#/members');
    const select = page.getByLabel('Role of second@demo.example');
    await select.selectOption('admin');
    const dialog = page.getByRole('dialog', { name: 'Make second@demo.example an admin?' });
    await dialog.waitFor();
    assert.equal((await focused(page)).text, 'Cancel', 'a change of privilege opens on Cancel');
    assert.equal(await select.inputValue(), 'viewer', 'nothing is changed while it asks');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await select.inputValue(), 'viewer');
    assert.equal((await admin('GET', '/members')).data.find((m: { id: string }) => m.id === added.id).role, 'viewer');
    await select.selectOption('admin');
    await dialog.getByRole('button', { name: 'Make second@demo.example admin' }).click();
    await page.getByRole('status').filter({ hasText: 'second@demo.example is now admin' }).waitFor();
    assert.equal((await admin('GET', '/members')).data.find((m: { id: string }) => m.id === added.id).role, 'admin');
    assert.equal((await focused(page)).id, `role-${added.id}`);
    assert.equal(await page.getByLabel('Role of second@demo.example').inputValue(), 'admin');
    // Remove opens on Cancel too.
    await page.getByRole('button', { name: 'Remove second@demo.example' }).press('Enter');
    await page.getByRole('dialog', { name: 'Remove second@demo.example?' }).waitFor();
    assert.equal((await focused(page)).text, 'Cancel');
    await page.keyboard.press('Escape');
  });

  test("D-154: every form's refusal is at its field: described by it, aria-invalid, focused, the name said once", async () => {
    /** The field's error: next to it, joined to it, the field marked and focused. */
    const atField = async (id: string): Promise<string> => {
      const error = page.locator(`#${id}-error[role="alert"]`);
      await error.waitFor();
      const control = page.locator(`#${id}`);
      assert.ok(((await control.getAttribute('aria-describedby')) ?? '').split(' ').includes(`${id}-error`), id);
      assert.equal(await control.getAttribute('aria-invalid'), 'true', id);
      assert.equal((await focused(page)).id, id);
      const [c, e] = [await control.boundingBox(), await error.boundingBox()];
      assert.ok(c && e && e.y >= c.y + c.height - 1 && e.y - (c.y + c.height) < 80 && e.y + e.height <= 800, `${id}: under its field`);
      return (await error.textContent()) ?? '';
    };
    await go('#/keys');
    await page.getByRole('button', { name: 'Create key' }).click();
    assert.match(await atField('key-name'), /Give the key a name/);
    // Sent again, the old error goes.
    await page.getByLabel('Name').fill('named');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('dialog', { name: 'Your new key' }).getByRole('button', { name: 'Done' }).click();
    assert.equal(await page.locator('#key-name-error').count(), 0);
    assert.equal(await page.locator('#key-name').getAttribute('aria-invalid'), null);

    await go('#/members');
    await page.getByLabel('Email', { exact: true }).fill('not-an-email');
    await page.getByRole('button', { name: 'Add member' }).click();
    assert.doesNotMatch(await atField('member-email'), /^email:/);

    await go(`#/app/${APP}`);
    await page.getByLabel('Model').fill('not-an-engine');
    await page.getByRole('button', { name: 'Save changes' }).click();
    const said = await atField('app-agent-model');
    await page.screenshot({ path: path.resolve(import.meta.dirname, '../../test-artifacts/dashboard-app-refused-1280.png') });
    assert.doesNotMatch(said, /agent\.model: agent\.model/);
    assert.doesNotMatch(said, /^agent\.model:/);
  });

  test('D-154, D-156: the delivery log reads to the second, with the delay since the attempt before; "Failed only" asks the server; "Redeliver every failed" sends them again', async () => {
    const endpoint = await admin('POST', '/webhook_endpoints', { app_id: APP, url: rx.url, events: ['conversation.created'] });
    rx.script({ status: 500, body: 'down' }, { status: 500, body: 'still down' });
    const failed = (await parley.call('POST', `/apps/${APP}/conversations`, { title: 'Fails twice' })).body.id as string;
    await rx.waitFor((r) => r.filter((x) => x.json?.data?.id === failed).length >= 2);
    const ok = (await parley.call('POST', `/apps/${APP}/conversations`, { title: 'Arrives' })).body.id as string;
    await rx.waitFor((r) => r.some((x) => x.json?.data?.id === ok));
    // The second failure ends the delivery (one retry); the log is read once both are recorded (bounded).
    const states = async () =>
      (await admin('GET', `/webhook_deliveries?endpoint_id=${endpoint.id}`)).data.map((d: { state: string }) => d.state).sort();
    let seen: string[] = [];
    for (let i = 0; i < 500 && (seen = await states()).join() !== 'failed,succeeded'; i++);
    assert.deepEqual(await states(), ['failed', 'succeeded']);
    await go(`#/webhook/${endpoint.id}`);
    const log = page.getByRole('region', { name: 'Deliveries' });
    const failedRow = log.getByRole('row').filter({ hasText: 'Failed' });
    await failedRow.locator('summary').press('Enter');
    const attempts = (await failedRow.locator('ol.attempts').textContent()) ?? '';
    assert.match(attempts, /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: HTTP 500, \d+ ms, \d+ s after the attempt before/);
    assert.match(attempts, /\d\d:\d\d:\d\d UTC: HTTP 500, \d+ ms, the first attempt/);
    assert.match((await failedRow.textContent()) ?? '', /\d\d:\d\d:\d\d UTC/);
    assert.equal(await log.getByRole('row').filter({ hasText: 'Succeeded' }).count(), 1);
    // D-156: the filter is the server's (the newest failed, not the failed among the newest shown).
    const asked = page.waitForRequest((r) => r.url().includes('/webhook_deliveries?') && r.url().includes('failed=true'));
    await page.getByLabel(/^Failed only/).press('Space');
    await asked;
    await log.getByRole('row').filter({ hasText: 'Succeeded' }).waitFor({ state: 'detached' });
    assert.equal(await log.getByRole('row').filter({ hasText: 'Failed' }).count(), 1);
    assert.equal((await focused(page)).id, 'log-failed-only');
    assert.deepEqual(await axe(page), []);

    // D-156: "Redeliver every failed" of the span chosen sends the failed delivery again (the receiver is up now).
    await page.getByLabel('Failed since').selectOption({ label: '1 hour' });
    await page.getByRole('button', { name: 'Redeliver every failed' }).click();
    await page.getByText('1 failed delivery is sent again; Refresh shows how it went.').waitFor();
    assert.equal((await focused(page)).id, 'redeliver-failed');
    await rx.waitFor((r) => r.filter((x) => x.json?.data?.id === failed).length >= 3);
    const audit = await admin('GET', '/audit?action=webhook_event.redelivered&limit=1');
    assert.equal(audit.data[0].actor.email, 'admin@demo.example');
  });

  test('D-129: "Send test event" on an endpoint’s page: the receiver gets a signed test event twice with one webhook-id; the log shows it', async () => {
    const receiver = await startReceiver();
    try {
      const endpoint = await admin('POST', '/webhook_endpoints', {
        app_id: 'app_knowledge',
        url: receiver.url,
        events: ['response.completed'],
      });
      await go(`#/webhook/${endpoint.id}`);
      await page.getByLabel('Event type').selectOption('conversation.created');
      await page.getByLabel(/^Send it twice/).check();
      await page.getByRole('button', { name: 'Send test event' }).click();
      await receiver.waitFor((r) => r.length >= 2);
      const wh = new Webhook(webhookSecretText(webhookSigningKey(KEY)));
      const events = receiver.received.map((r) => wh.verify(r.body, r.headers) as { id: string; type: string; test: boolean });
      assert.equal(events[0]!.id, events[1]!.id, 'one webhook-id');
      assert.deepEqual([events[0]!.type, events[0]!.test], ['conversation.created', true]);
      await page.getByText(`Test event ${events[0]!.id} is on its way`).waitFor();
      assert.equal((await focused(page)).id, 'wh-test-send');
      // The log, read again once both attempts are recorded (bounded), shows the delivery.
      let done = false;
      for (let i = 0; i < 500 && !done; i++)
        done = (await admin('GET', `/webhook_deliveries?event_id=${events[0]!.id}`)).data[0]?.attempts === 2;
      await page.getByRole('button', { name: 'Refresh' }).click();
      const row = page.getByRole('region', { name: 'Deliveries' }).getByRole('row').filter({ hasText: events[0]!.id });
      await row.filter({ hasText: 'Succeeded' }).waitFor();
      assert.match((await row.textContent()) ?? '', /conversation\.created/);
      assert.deepEqual(await axe(page), []);
    } finally {
      await receiver.close();
    }
  });

  test('D-154: the credits banner on every page at 80 % used and at zero, and what happens at zero per plan', async () => {
    await go('#/keys');
    assert.equal(await page.getByTestId('credits-banner').count(), 0, 'no banner while credits are plenty');
    const balance = async () => admin('GET', '/credits');
    const complete = async () =>
      assert.equal((await parley.call('POST', `/apps/${APP}/completions`, { prompt: 'Summarise billing' })).status, 200);
    // Completions until 80 % is used (each a small part of the allowance: the fixtures' price is low).
    for (let i = 0; i < 400 && (await balance()).used < 0.8 * (await balance()).allowance; i++) await complete();
    const near = await balance();
    assert.ok(near.credits > 0 && near.used >= 0.8 * near.allowance, JSON.stringify(near));
    for (const hash of ['#/keys', '#/usage']) {
      await go(hash);
      const banner = page.getByRole('status').and(page.getByTestId('credits-banner'));
      assert.match((await banner.textContent()) ?? '', /\d+ % of this month's credits are used/);
      assert.match(
        (await banner.textContent()) ?? '',
        /At zero: replies are refused for the 1 app on a hard plan; for the \d+ apps on a soft plan, replies run, with a warning/,
      );
    }
    // The usage page says, per plan, what happens at zero.
    const plans = page.getByRole('region', { name: 'Plans' });
    await plans.getByRole('cell', { name: 'hard: replies are refused' }).waitFor();
    await plans.getByRole('cell', { name: 'soft: replies run, with a warning' }).first().waitFor();
    assert.deepEqual(await axe(page), []);
    // One day of usage: the chart has its axes, the day under its bar, and the bar is not the whole width.
    const chart = page.locator('svg.chart');
    const today = new Date().toISOString().slice(0, 10);
    assert.deepEqual(
      await chart
        .locator('text')
        .allTextContents()
        .then((t) => t.includes(today) && t.includes('0')),
      true,
    );
    assert.equal(await chart.locator('line.axis').count(), 2);
    assert.ok(Number(await chart.locator('rect').getAttribute('width')) <= 48);
    await page.screenshot({
      path: path.resolve(import.meta.dirname, '../../test-artifacts/dashboard-usage-banner-1280.png'),
      fullPage: true,
    });

    // Past zero on a soft plan the replies go on, and the banner says the credits are spent.
    for (let i = 0; i < 400 && (await balance()).credits > 0; i++) await complete();
    await go('#/members');
    const spent = page.getByTestId('credits-banner');
    assert.match((await spent.textContent()) ?? '', /This month's credits are spent: -?[\d.]+ left of/);
    assert.match((await spent.textContent()) ?? '', /Now: replies are refused for the 1 app on a hard plan/);
    await spent.getByRole('link', { name: 'Usage and credits' }).waitFor();
    // D-157: a reply refused at zero on the hard plan shows on the usage page, with why.
    const refused = await parley.call('POST', '/apps/app_limited/completions', { prompt: 'Summarise billing' });
    assert.deepEqual([refused.status, refused.body.error.code], [429, 'credits_exhausted']);
    await go('#/usage');
    const row = page.getByRole('region', { name: 'Refused requests per app per day' }).getByRole('row').filter({ hasText: 'app_limited' });
    assert.match((await row.textContent()) ?? '', /app_limited\s*Credits spent on a hard plan\s*1/);
    assert.deepEqual(await axe(page), []);
  });

  test('an invitation link opened in a new tab of a signed-in browser (a fresh load) says who is signed in, not "Not found" (D-72)', async () => {
    const made = await admin('POST', '/members', { email: 'fresh@demo.example', role: 'viewer' });
    const fresh = await context.newPage();
    try {
      await fresh.goto(made.invite.accept_url as string);
      await fresh.getByRole('heading', { level: 1, name: 'An invitation' }).waitFor();
      assert.match((await fresh.locator('main').textContent()) ?? '', /You are signed in as admin@demo\.example/);
      assert.equal(fresh.url(), `${origin}/dashboard#/invite`, 'the token left the URL (D-98)');
      // Loaded again, the link (its token gone) still says so; the navigation is the signed-in one.
      await fresh.reload();
      await fresh.getByRole('heading', { level: 1, name: 'An invitation' }).waitFor();
      await fresh.getByRole('link', { name: 'Usage and credits' }).waitFor();
    } finally {
      await fresh.close();
    }
  });

  test('an invitation link opened while signed in says who is signed in, and signs out to accept it (D-72)', async () => {
    const made = await admin('POST', '/members', { email: 'later@demo.example', role: 'viewer' });
    const link = made.invite.accept_url as string;
    await go('#/keys');
    await page.goto(link);
    await page.getByRole('heading', { level: 1, name: 'An invitation' }).waitFor();
    assert.match((await page.locator('main').textContent()) ?? '', /You are signed in as admin@demo\.example/);
    assert.equal(page.url(), `${origin}/dashboard#/invite`, 'the token left the URL (D-98)');
    assert.deepEqual(await axe(page), []);
    await page.getByRole('button', { name: 'Sign out and accept the invitation' }).click();
    await page.getByRole('heading', { level: 1, name: 'Set your password' }).waitFor();
    await page.getByLabel('New password (8 characters or more)').fill('later-password-1');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    assert.match((await page.getByTestId('member').textContent()) ?? '', /later@demo\.example \(viewer\)/);
  });
});
