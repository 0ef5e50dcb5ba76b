// The dashboard in a real browser (docs/dashboard.md, D-95…D-99): Debian's Chromium, headless, driven by
// playwright-core, signing in as the demo admin of the README and doing what a team does there.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { adminGet, adminToken } from '../support/admin-token.ts';
import { chromiumMissing, editedFixtures, launch } from '../support/browser.ts';
import { hashPassword } from '../../src/services/admin/passwords.ts';
import { APP, startTestServer, type TestServer } from '../support/helpers.ts';
import { axe, focused, signIn, tabThrough } from '../support/dashboard-page.ts';
import { demoAdminToken, type Receiver, startReceiver } from '../support/webhook-receiver.ts';

const skip = chromiumMissing();
const ROOT = path.resolve(import.meta.dirname, '../..');
/** Test artifacts (gitignored); docs/images/ keeps one of each page for docs/dashboard.md. */
const ARTIFACTS = path.join(ROOT, 'test-artifacts');
/** D-97: a message that would run if it were ever parsed as markup. */
const HOSTILE = '<img src=x onerror="window.__pwned=1"><b>not bold</b> where is my order?';
const DELETED_TITLE = 'Refund for order 1042';
/** Members the fixtures do not have: a viewer of the demo team, and an admin of the other team. */
const VIEWER = { email: 'viewer@demo.example', password: 'viewer-password-1' };
const OTHER = { email: 'admin@other.example', password: 'other-password-1' };
const INVITED = 'invited@demo.example';

let parley: TestServer;
let context: BrowserContext;
let origin: string;
let deletedId: string;
let formConversation: string;
const contexts: BrowserContext[] = [];
/** Real webhook receivers on 127.0.0.1: one that answers 200, one that answers 410 Gone (D-86). */
let rx: Receiver;
let gone: Receiver;
/** Made by the webhooks test, visited again by the axe, keyboard and viewer tests. */
let goneEndpoint = '';
let goneEvent = '';

before(async () => {
  if (skip) return;
  const fixturesDir = await editedFixtures(async (f) =>
    f.members.push(
      {
        id: 'mem_viewer',
        team_id: 'team_demo',
        email: VIEWER.email,
        name: 'Viewer',
        role: 'viewer',
        password_hash: await hashPassword(VIEWER.password, 10),
      },
      {
        id: 'mem_other',
        team_id: 'team_other',
        email: OTHER.email,
        name: 'Other',
        role: 'admin',
        password_hash: await hashPassword(OTHER.password, 10),
      },
    ),
  );
  parley = await startTestServer({ fixturesDir, webhookPollMs: 50 });
  rx = await startReceiver();
  gone = await startReceiver();
  await fs.mkdir(ARTIFACTS, { recursive: true });
  origin = new URL(parley.baseUrl).origin;
  // A soft-deleted conversation with a history (D-73): the dashboard must find it and read it.
  const base = `/apps/${APP}/conversations`;
  const created = await parley.call('POST', base, { title: DELETED_TITLE, external_user_id: 'user-77' });
  assert.equal(created.status, 200);
  deletedId = created.body.id;
  assert.equal((await parley.call('POST', `${base}/${deletedId}`, { message: { content: HOSTILE }, stream: false })).status, 200);
  assert.equal((await parley.call('DELETE', `${base}/${deletedId}`)).status, 200);
  // A conversation whose reply drew a form (data_spec, §6.3): the dashboard draws it as the widget does.
  const genui = `/apps/app_genui/conversations`;
  formConversation = (await parley.call('POST', genui, { title: 'Wants a call' })).body.id;
  assert.equal(
    (await parley.call('POST', `${genui}/${formConversation}`, { message: { content: 'please contact me' }, stream: false })).status,
    200,
  );
  context = await launch();
  contexts.push(context);
});

after(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await parley?.close();
  await rx?.close();
  await gone?.close();
});

/** A page of the dashboard; CSP violations and page errors are collected (there must be none). */
async function open(c: BrowserContext, hash = ''): Promise<Page & { problems: string[] }> {
  const page = Object.assign(await c.newPage(), { problems: [] as string[] });
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) page.problems.push(m.text());
  });
  page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
  await page.goto(`${origin}/dashboard${hash}`);
  return page;
}

/** /v1 with a key: the app's config (200), or the status of its refusal. */
async function v1Status(key: string): Promise<number> {
  const res = await fetch(`${parley.baseUrl}/apps/${APP}/config`, { headers: { authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

/** D-98: nothing of a credential in web storage or in the URL. */
async function assertNoStoredCredential(page: Page, secret?: string): Promise<void> {
  const stored = await page.evaluate(() => ({ local: localStorage.length, session: sessionStorage.length, url: location.href }));
  assert.equal(stored.local, 0);
  assert.equal(stored.session, 0);
  if (secret) assert.ok(!stored.url.includes(secret));
  assert.doesNotMatch(stored.url, /csrf|password|sk_live|pk_live/i);
}

/** Every page of the dashboard, as hash routes (D-95), once the tests before have made their data. */
const everyPage = () => [
  `#/conversation/app_genui/${formConversation}`,
  '#/apps',
  `#/app/${APP}`,
  '#/members',
  '#/keys',
  '#/tokens',
  `#/conversations?app=${APP}&deleted=include`,
  `#/conversation/${APP}/${deletedId}`,
  '#/usage',
  `#/usage?app=${APP}`,
  '#/audit',
  '#/webhooks',
  `#/webhook/${goneEndpoint}`,
  `#/webhook-event/${goneEvent}`,
];

describe('the dashboard in Chromium (D-95…D-99)', { skip }, () => {
  let page: Page & { problems: string[] };

  test('a wrong password is told apart; the demo admin signs in and sees the team and the member', async () => {
    page = await open(context);
    await signIn(page, 'not-the-password');
    await page.getByRole('alert').filter({ hasText: 'do not match' }).waitFor();
    // D-69: the password field is emptied and focused for the next try.
    assert.equal(await page.getByLabel('Password').inputValue(), '');
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'password');
    await signIn(page);
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    assert.equal(await page.getByTestId('team').textContent(), 'Demo team');
    assert.match((await page.getByTestId('member').textContent()) ?? '', /admin@demo\.example \(admin\)/);
    await assertNoStoredCredential(page);
    assert.deepEqual(page.problems, []);
  });

  test('by keyboard: create a key, shown once, that /v1 accepts; revoke it, named, and /v1 refuses it', async () => {
    await page.getByLabel('Name').focus();
    await page.keyboard.type('browser key');
    await page.keyboard.press('Enter');
    const dialog = page.getByRole('dialog', { name: 'Your new key' });
    await dialog.waitFor();
    assert.match((await dialog.textContent()) ?? '', /will not be shown again/);
    const key = await dialog.locator('input.secret').inputValue();
    assert.match(key, /^sk_live_[A-Za-z0-9]{38}$/);
    // Focus is in the dialog, on its copy button; Escape closes it and focus returns to "Create key".
    assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Copy key');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'detached' });
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'create-key');
    // D-98: the key left the page with its dialog; the list shows it redacted.
    assert.ok(!(await page.content()).includes(key));
    await page.getByRole('cell', { name: `sk_live_…${key.slice(-4)}` }).waitFor();
    await assertNoStoredCredential(page, key);
    assert.equal(await v1Status(key), 200);

    const row = page.getByRole('row').filter({ hasText: 'browser key' });
    await row.getByRole('button', { name: 'Revoke browser key' }).click();
    const confirm = page.getByRole('dialog', { name: 'Revoke browser key?' });
    assert.match((await confirm.textContent()) ?? '', new RegExp(`browser key \\(sk_live_…${key.slice(-4)}\\)`));
    await confirm.getByRole('button', { name: 'Revoke browser key' }).click();
    await page.getByRole('status').filter({ hasText: 'revoked' }).waitFor();
    await row.getByText(/^Revoked /).waitFor();
    // D-99: the revoked key's buttons are gone; focus is on Create key, never lost to the body.
    assert.equal((await focused(page)).id, 'create-key');
    assert.equal(await v1Status(key), 401);
    assert.deepEqual(page.problems, []);
  });

  test('rolls a key with a chosen expiry: the new key works at once, the old one until then', async () => {
    await page.getByLabel('Name').fill('rolled key');
    await page.getByRole('button', { name: 'Create key' }).click();
    const first = page.getByRole('dialog', { name: 'Your new key' });
    const old = await first.locator('input.secret').inputValue();
    await first.getByRole('button', { name: 'Done' }).click();
    await first.waitFor({ state: 'detached' });
    await page.getByRole('row').filter({ hasText: 'rolled key' }).getByRole('button', { name: 'Roll rolled key' }).click();
    const roll = page.getByRole('dialog', { name: 'Roll rolled key' });
    await roll.getByLabel('The old key stops working').selectOption({ label: 'At once' });
    await roll.getByRole('button', { name: 'Roll key' }).click();
    const shown = page.getByRole('dialog', { name: 'New key for rolled key' });
    const fresh = await shown.locator('input.secret').inputValue();
    assert.notEqual(fresh, old);
    await shown.getByRole('button', { name: 'Done' }).click();
    assert.equal(await v1Status(fresh), 200);
    assert.equal(await v1Status(old), 401);
  });

  test('finds the soft-deleted conversation by its title and reads its history as text', async () => {
    await page.getByRole('link', { name: 'Conversations' }).click();
    await page.getByRole('heading', { level: 1, name: 'Conversations' }).waitFor();
    await page.getByLabel('App').fill(APP);
    await page.getByLabel('Title or user id contains').fill('refund');
    await page.getByLabel('Show').selectOption('only');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('link', { name: DELETED_TITLE }).click();
    await page.getByRole('heading', { level: 1, name: DELETED_TITLE }).waitFor();
    const history = page.locator('ol.history');
    await history.getByText(HOSTILE, { exact: true }).waitFor();
    // D-97: the message is text: no element was made of it, and nothing ran.
    assert.equal(await history.locator('img, b').count(), 0);
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    assert.match((await page.locator('dl.facts').textContent()) ?? '', /history kept until/);
    // Restore (D-73): it is live again on /v1.
    await page.getByRole('button', { name: 'Restore conversation' }).click();
    await page.getByRole('dialog', { name: 'Restore this conversation?' }).getByRole('button', { name: 'Restore' }).click();
    await page.getByRole('status').filter({ hasText: 'Restored' }).waitFor();
    assert.equal((await focused(page)).tag, 'H1', 'the Restore button is gone: focus is on the heading');
    assert.equal((await parley.call('GET', `/apps/${APP}/conversations/${deletedId}`)).status, 200);
    assert.deepEqual(page.problems, []);
  });

  test('D-158: an untitled conversation shows the title the agent generated, marked so, and q finds it by that title', async () => {
    const base = `/apps/${APP}/conversations`;
    const id = (await parley.call('POST', base, {})).body.id as string;
    assert.equal((await parley.call('POST', `${base}/${id}`, { message: { content: 'Hello there' }, stream: false })).status, 200);
    const generated = Object.values((await parley.call('GET', `${base}/${id}`)).body.generated_title as Record<string, string>)[0]!;
    assert.ok(generated, 'the agent generated a title');
    await page.goto(`${origin}/dashboard#/conversations?app=${APP}&q=${encodeURIComponent(generated.slice(0, 4).toLowerCase())}`);
    await page.locator('main .page[aria-busy="false"]').waitFor();
    const link = page.getByRole('link', { name: `${generated} (generated)` });
    assert.equal(await link.getAttribute('href'), `#/conversation/${APP}/${id}`);
    await link.click();
    await page.getByRole('heading', { level: 1, name: `${generated} (generated)` }).waitFor();
    assert.deepEqual(page.problems, []);
  });

  test("a reply's form is drawn as the widget draws it, labelled and disabled", async () => {
    await page.goto(`${origin}/dashboard#/conversation/app_genui/${formConversation}`);
    const form = page.locator('ol.history form.gen-form');
    await form.waitFor();
    const controls = form.locator('input, select, textarea');
    assert.ok((await controls.count()) >= 2);
    for (const c of await controls.all()) assert.equal(await c.isDisabled(), true);
    assert.ok((await form.getByLabel(/email/i).count()) >= 1, 'a labelled control');
    assert.deepEqual(await axe(page), []);
  });

  test("changes an app's streaming default and /v1 serves it; a refused value is shown at its field (D-71)", async () => {
    await page.getByRole('link', { name: 'Apps', exact: true }).click();
    await page.getByRole('region', { name: 'Apps' }).getByRole('link', { name: 'Demo app' }).click();
    await page.getByRole('heading', { level: 1, name: 'Demo app' }).waitFor();
    const before = (await parley.call('GET', `/apps/${APP}/config`)).body.stream;
    await page.getByLabel('Streams by default').setChecked(!before);
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByRole('status').filter({ hasText: 'Saved' }).waitFor();
    // Focus stays where the save was made.
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'app-save');
    assert.equal((await parley.call('GET', `/apps/${APP}/config`)).body.stream, !before);
    await page.getByLabel('Model').fill('not-an-engine');
    await page.getByRole('button', { name: 'Save changes' }).click();
    // D-154: the refusal is at its field (whose label names it), not in the form's status.
    await page.locator('#app-agent-model-error[role="alert"]').waitFor();
    assert.equal(await page.evaluate(() => document.activeElement?.id), 'app-agent-model');
    assert.equal(await page.getByLabel('Model').getAttribute('aria-invalid'), 'true');
    assert.equal((await parley.call('GET', `/apps/${APP}/config`)).body.stream, !before, 'a refused save changes nothing');
  });

  test('adds a member with a one-time invitation, and removes them after a confirmation naming them (D-72)', async () => {
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByLabel('Email', { exact: true }).fill('new.member@demo.example');
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('button', { name: 'Add member' }).click();
    const invite = page.getByRole('dialog', { name: 'Invitation for new.member@demo.example' });
    const token = await invite.getByLabel('Invitation token').inputValue();
    assert.ok(token.length >= 20);
    await invite.getByRole('button', { name: 'Done' }).click();
    await invite.waitFor({ state: 'detached' });
    assert.ok(!(await page.content()).includes(token), 'the token left with its dialog (D-98)');
    const row = page.getByRole('row').filter({ hasText: 'new.member@demo.example' });
    await row.getByText('invited, no password yet').waitFor();
    await row.getByRole('button', { name: 'Remove new.member@demo.example' }).click();
    await page
      .getByRole('dialog', { name: 'Remove new.member@demo.example?' })
      .getByRole('button', { name: 'Remove new.member@demo.example' })
      .click();
    await page.getByRole('status').filter({ hasText: 'removed' }).waitFor();
    await row.waitFor({ state: 'detached' });
    assert.equal((await focused(page)).id, 'member-email', 'focus moves to the add form, not to the body');
  });

  test('an invited member opens the link, sets a password and is signed in; the token leaves the URL; a used or bad one is told (D-72, D-98)', async () => {
    await page.getByLabel('Email', { exact: true }).fill(INVITED);
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('button', { name: 'Add member' }).click();
    const dialog = page.getByRole('dialog', { name: `Invitation for ${INVITED}` });
    const token = await dialog.getByLabel('Invitation token').inputValue();
    const link = await dialog.getByLabel('Invitation link').inputValue();
    assert.equal(link, `${origin}/dashboard#/invite/${token}`);
    await dialog.getByRole('button', { name: 'Done' }).press('Enter');
    await dialog.waitFor({ state: 'detached' });
    assert.equal((await focused(page)).id, 'member-add');

    const c = await launch();
    contexts.push(c);
    // A fresh page that loads the link (the token in its fragment, which no request carries).
    const p = Object.assign(await c.newPage(), { problems: [] as string[] });
    p.on('pageerror', (e) => p.problems.push(`pageerror: ${e.message}`));
    const urls: string[] = [];
    p.on('request', (r) => urls.push(r.url()));
    await p.goto(link);
    await p.getByRole('heading', { level: 1, name: 'Set your password' }).waitFor();
    // Read once, then out of the URL (history.replaceState) and of every request's URL; nothing stored.
    assert.equal(p.url(), `${origin}/dashboard#/invite`);
    assert.deepEqual(
      urls.filter((u) => u.includes(token)),
      [],
    );
    await assertNoStoredCredential(p, token);
    assert.equal((await focused(p)).id, 'invite-password');
    assert.deepEqual(await axe(p), [], 'the invitation page');
    await p.keyboard.type('short');
    await p.keyboard.press('Enter');
    await p.getByRole('alert').filter({ hasText: '8 characters' }).waitFor();
    await p.getByLabel('New password (8 characters or more)').fill('invited-password-1');
    await p.keyboard.press('Enter');
    await p.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    assert.match((await p.getByTestId('member').textContent()) ?? '', /invited@demo\.example \(viewer\)/);
    assert.equal(p.url(), `${origin}/dashboard#/keys`);
    await assertNoStoredCredential(p, token);
    assert.deepEqual(p.problems, []);

    // The same link again, in the browser now signed in as the invited member (a fresh load, D-72): it says
    // who is signed in; signed out, the token is used, and said so; the form then takes one pasted by hand.
    const again = await open(c, link.slice(`${origin}/dashboard`.length));
    await again.getByRole('heading', { level: 1, name: 'An invitation' }).waitFor();
    await again.getByRole('button', { name: 'Sign out and accept the invitation' }).click();
    await again.getByLabel('New password (8 characters or more)').fill('another-password-1');
    await again.getByRole('button', { name: 'Set password and sign in' }).click();
    await again.getByRole('alert').filter({ hasText: 'unknown, used or expired' }).waitFor();
    assert.equal((await focused(again)).id, 'invite-token');
    assert.equal(again.url(), `${origin}/dashboard#/invite`);
    // A made-up token, by hand from the sign-in page.
    const fresh = await launch();
    contexts.push(fresh);
    const bad = await open(fresh);
    await bad.getByRole('button', { name: 'I have an invitation' }).click();
    await bad.getByLabel('Invitation token').fill('not-a-token');
    await bad.getByLabel('New password (8 characters or more)').fill('another-password-1');
    await bad.keyboard.press('Enter');
    await bad.getByRole('alert').filter({ hasText: 'unknown, used or expired' }).waitFor();
    const keys = await tabThrough(bad);
    assert.deepEqual(keys.missed, [], 'the invitation form by keyboard');
    assert.deepEqual(keys.unseen, []);
  });

  test('usage and credits, and the audit log filtered by action, show what just happened', async () => {
    await page.getByRole('link', { name: 'Usage and credits' }).click();
    await page.getByTestId('balance').waitFor();
    await page.getByRole('region', { name: 'Usage per app per day' }).getByRole('cell', { name: APP }).first().waitFor();
    // A completion's credits appear (D-74): "Used" grows once the page is read again.
    const used = async () =>
      Number(((await page.getByTestId('balance').locator('dt:text-is("Used") + dd').textContent()) ?? '').replace(/,/g, ''));
    const before = await used();
    assert.equal((await parley.call('POST', `/apps/${APP}/completions`, { prompt: 'Summarise billing' })).status, 200);
    // The balance may lag the debit by D-74's refresh: read again until it shows (bounded).
    for (let i = 0; i < 30 && (await used()) <= before; i++) {
      await page.reload();
      await page.locator('main .page[aria-busy="false"]').waitFor();
    }
    assert.ok((await used()) > before, `credits used went from ${before} to ${await used()}`);
    // The chart is an image with a text alternative; its bars are the days with usage.
    assert.ok((await page.locator('svg.chart[role="img"] rect').count()) >= 1);
    assert.match((await page.locator('svg.chart').getAttribute('aria-label')) ?? '', /^Tokens per day/);
    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByLabel('Action').fill('key.revoked');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/action=key\.revoked/);
    const cells = page.getByRole('region', { name: 'Audit entries' }).getByRole('cell', { name: 'key.revoked' });
    await cells.first().waitFor();
    assert.equal(await page.getByRole('region', { name: 'Audit entries' }).getByRole('cell', { name: 'key.created' }).count(), 0);
  });

  test('usage and credits of one app: the filter keeps its rows only', async () => {
    await page.getByRole('link', { name: 'Usage and credits' }).click();
    await page.locator('main .page[aria-busy="false"]').waitFor();
    await page.getByLabel('App', { exact: true }).selectOption('app_genui');
    await page.getByRole('button', { name: 'Show' }).press('Enter');
    await page.waitForURL(/#\/usage\?app=app_genui/);
    await page.getByRole('heading', { level: 2, name: /^Usage of app_genui from / }).waitFor();
    const region = page.getByRole('region', { name: 'Usage per app per day' });
    await region.getByRole('cell', { name: 'app_genui' }).first().waitFor();
    assert.equal(await region.getByRole('cell', { name: APP, exact: true }).count(), 0);
    assert.equal(await page.getByLabel('App', { exact: true }).inputValue(), 'app_genui');
    await page.getByLabel('App', { exact: true }).selectOption('');
    await page.getByRole('button', { name: 'Show' }).click();
    await region.getByRole('cell', { name: APP, exact: true }).first().waitFor();
  });

  test("Settings holds API keys, access tokens, members and webhooks (§5.3); a member's token shows its last use and is revoked after a confirmation naming it (D-153)", async () => {
    const settings = page.getByRole('navigation', { name: 'Dashboard' }).getByRole('list', { name: 'Settings' });
    const links = await settings.getByRole('link').allTextContents();
    assert.deepEqual(links, ['API keys', 'Access tokens', 'Members', 'Webhooks']);
    // A token made the way the CLI's `parley admin login` makes one, then used once.
    const token = await adminToken(parley.baseUrl);
    assert.equal((await adminGet(parley.baseUrl, token, '/keys')).status, 200);
    await settings.getByRole('link', { name: 'Access tokens' }).click();
    await page.getByRole('heading', { level: 1, name: 'Access tokens' }).waitFor();
    const row = page.getByRole('row').filter({ hasText: 'tests' });
    const cells = await row.getByRole('cell').allTextContents();
    assert.match(cells[3]!, /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/, `last used: ${cells}`);
    await row.getByRole('button', { name: 'Revoke tests' }).click();
    const dialog = page.getByRole('dialog', { name: 'Revoke tests?' });
    await dialog.getByRole('button', { name: 'Revoke tests' }).click();
    await page.getByRole('status').filter({ hasText: 'revoked' }).waitFor();
    assert.equal((await adminGet(parley.baseUrl, token, '/keys')).status, 401, 'refused at once');
    assert.deepEqual(page.problems, []);
  });

  test('webhooks: add an endpoint by keyboard; its log shows status and timing; redeliver; disable; a 410 says why; delete names it (D-80…D-87)', async () => {
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    await page.locator('main .page[aria-busy="false"]').waitFor();
    // D-80: the signing secret's derivation is explained; no secret is shown (D-98).
    const signing = page.getByRole('region', { name: 'How deliveries are signed' });
    assert.match((await signing.textContent()) ?? '', /HMAC-SHA256.*parley webhook signing v1/);
    assert.doesNotMatch((await page.locator('main').textContent()) ?? '', /whsec_[A-Za-z0-9+/]{8}|sk_live_[A-Za-z0-9]{8}/);
    // D-82: a private address is refused when saved (nothing is connected to), shown at its field.
    const url = page.getByLabel('URL', { exact: true });
    await url.fill('http://10.0.0.1/hook');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    // D-154: the message is under its field, in view at 1280×800, joined to it by aria-describedby, and
    // says the field's name at most once (its label names it).
    const urlError = page.locator('#wh-url-error[role="alert"]');
    await urlError.waitFor();
    assert.equal((await focused(page)).id, 'wh-url');
    assert.equal(await url.getAttribute('aria-invalid'), 'true');
    assert.deepEqual((await url.getAttribute('aria-describedby'))?.split(' '), ['wh-url-hint', 'wh-url-error']);
    assert.doesNotMatch((await urlError.textContent()) ?? '', /url: /);
    const [fieldBox, errorBox] = [await url.boundingBox(), await urlError.boundingBox()];
    assert.ok(fieldBox && errorBox && errorBox.y + errorBox.height <= 800, `the error is in view: ${JSON.stringify(errorBox)}`);
    assert.ok(errorBox.y - (fieldBox.y + fieldBox.height) < 80, 'the error is next to its field');
    // D-170's rule, as the field's hint says it: loopback is accepted in local development only.
    assert.match(
      (await page.locator('#wh-url-hint').textContent()) ?? '',
      /loopback \(127\.0\.0\.1, localhost\) is accepted only in local development: Parley itself on loopback, without --public-url/,
    );
    // By keyboard: the URL, one event instead of all, a description, Enter.
    await url.fill('');
    await page.keyboard.type(rx.url);
    await page.getByLabel('All events, those added later too').press('Space');
    await page.getByLabel('conversation.created', { exact: true }).press('Space');
    await page.getByLabel('Description (optional)').focus();
    await page.keyboard.type('order sync');
    await page.keyboard.press('Enter');
    await page
      .getByRole('status')
      .filter({ hasText: `Endpoint ${rx.url} added` })
      .waitFor();
    assert.equal((await focused(page)).id, 'wh-add', 'focus stays on Add endpoint');
    const list = page.getByRole('region', { name: 'Webhook endpoints' });
    const row = list.getByRole('row').filter({ hasText: 'order sync' });
    await row.getByRole('cell', { name: 'conversation.created', exact: true }).waitFor();
    await row.getByRole('cell', { name: 'Enabled', exact: true }).waitFor();
    const endpointId = decodeURIComponent(((await row.getByRole('link').getAttribute('href')) ?? '').split('/').pop()!);

    // An event, delivered to the real receiver; the endpoint's log shows it with status and timing.
    const conv = (await parley.call('POST', `/apps/${APP}/conversations`, { title: 'Webhook order' })).body.id as string;
    await rx.waitFor((r) => r.some((x) => x.json?.data?.id === conv));
    const evt = rx.received.find((x) => x.json?.data?.id === conv)!.headers['webhook-id']!;
    await row.getByRole('link', { name: rx.url }).click();
    await page.getByRole('heading', { level: 1, name: 'Endpoint order sync' }).waitFor();
    const log = page.getByRole('region', { name: 'Deliveries' });
    const logRow = log.getByRole('row').filter({ hasText: evt });
    // The attempt is recorded just after the receiver answers: Refresh until it shows (bounded).
    for (let i = 0; i < 50 && (await logRow.filter({ hasText: 'Succeeded' }).count()) === 0; i++)
      await Promise.all([
        page.waitForResponse((r) => r.url().includes('/admin/v1/webhook_deliveries')),
        page.getByRole('button', { name: 'Refresh' }).click(),
      ]);
    await logRow.getByRole('cell', { name: 'Succeeded' }).waitFor();
    await logRow.getByRole('cell', { name: 'HTTP 200' }).waitFor();
    assert.match((await logRow.textContent()) ?? '', /conversation\.created.*\d+ ms/);
    await logRow.locator('summary').press('Enter');
    assert.match((await logRow.locator('ol.attempts').textContent()) ?? '', /UTC: HTTP 200, \d+ ms/);
    // Redeliver (D-87): the receiver gets the same webhook-id again; focus stays on the row's button.
    await logRow.getByRole('button', { name: `Redeliver ${evt}` }).press('Enter');
    await page.getByRole('status').filter({ hasText: 'is sent again' }).waitFor();
    await rx.waitFor((r) => r.filter((x) => x.headers['webhook-id'] === evt).length >= 2);
    assert.match((await focused(page)).id, /^redeliver-/);
    // The event's page: its payload as text, its deliveries per endpoint.
    await logRow.getByRole('link', { name: evt }).click();
    await page.getByRole('heading', { level: 1, name: `Event ${evt}` }).waitFor();
    await page.locator('main .page[aria-busy="false"]').waitFor();
    assert.match((await page.getByRole('region', { name: 'Payload' }).textContent()) ?? '', new RegExp(conv));
    await page.getByRole('region', { name: 'Deliveries' }).getByRole('link', { name: endpointId }).click();

    // Disable it in its settings: the state says who disabled it; focus stays on Save.
    await page.getByRole('heading', { level: 1, name: 'Endpoint order sync' }).waitFor();
    await page.getByLabel(/^Enabled/).press('Space');
    await page.getByRole('button', { name: 'Save changes' }).press('Enter');
    await page.getByRole('status').filter({ hasText: 'Saved: disabled by an admin' }).waitFor();
    assert.equal((await focused(page)).id, 'wh-save');
    assert.match((await page.locator('dl.facts').textContent()) ?? '', /Disabled by an admin/);

    // An endpoint that answers 410 Gone is disabled by Parley, and the list says why (D-86).
    await page.getByRole('link', { name: 'Back to the endpoints' }).click();
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    gone.script({ status: 410, body: 'gone' });
    await page.getByLabel('URL', { exact: true }).fill(gone.url);
    await page.getByLabel('Description (optional)').fill('retired');
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Endpoint ${gone.url} added` })
      .waitFor();
    const other = (await parley.call('POST', `/apps/${APP}/conversations`, { title: 'Gone' })).body.id as string;
    await gone.waitFor((r) => r.some((x) => x.json?.data?.id === other));
    goneEvent = gone.received[0]!.headers['webhook-id']!;
    const retired = list.getByRole('row').filter({ hasText: 'retired' });
    goneEndpoint = decodeURIComponent(((await retired.getByRole('link').getAttribute('href')) ?? '').split('/').pop()!);
    for (let i = 0; i < 50 && (await retired.filter({ hasText: '410 Gone' }).count()) === 0; i++) {
      await Promise.all([page.waitForResponse((r) => r.url().includes('/admin/v1/webhook_endpoints')), page.reload()]);
      await page.locator('main .page[aria-busy="false"]').waitFor();
    }
    await retired.getByRole('cell', { name: 'Disabled: it answered 410 Gone' }).waitFor();

    // Enable the first again from the list: focus stays on its (renamed) button.
    await row.getByRole('button', { name: 'Enable order sync' }).press('Enter');
    await row.getByRole('cell', { name: 'Enabled', exact: true }).waitFor();
    assert.equal((await focused(page)).id, `wh-toggle-${endpointId}`);
    // Delete, after a confirmation naming it; Escape keeps it and gives focus back to its button.
    await row.getByRole('button', { name: 'Delete order sync' }).press('Enter');
    const confirm = page.getByRole('dialog', { name: 'Delete the endpoint order sync?' });
    assert.match((await confirm.textContent()) ?? '', new RegExp(`${rx.url.replace(/[.]/g, '\\.')} \\(order sync\\) gets no more events`));
    await page.keyboard.press('Escape');
    await confirm.waitFor({ state: 'detached' });
    assert.match((await focused(page)).text, /^Delete order sync$/);
    await row.getByRole('button', { name: 'Delete order sync' }).press('Enter');
    await confirm.getByRole('button', { name: 'Delete endpoint' }).press('Enter');
    await page.getByRole('status').filter({ hasText: 'order sync was deleted' }).waitFor();
    // The status comes first, then the list is drawn again without the row.
    await row.waitFor({ state: 'detached' });
    assert.equal((await focused(page)).id, 'wh-add', 'focus goes to Add endpoint, not to the body');
    const left = await page.evaluate(async () =>
      (await (await fetch('/admin/v1/webhook_endpoints')).json()).data.map((e: { id: string }) => e.id),
    );
    assert.deepEqual(left, [goneEndpoint]);
    assert.deepEqual(page.problems, []);
  });

  test('D-150: the page states the signing rule; an endpoint shows the key chosen for it, and says so when that key is revoked', async () => {
    const token = await demoAdminToken(origin);
    const call = async (method: string, p: string, body?: unknown) =>
      (
        await fetch(`${origin}/admin/v1${p}`, {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
      ).json() as Promise<any>;
    const key = await call('POST', '/keys', { type: 'secret', name: 'Receiver key' });
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { level: 1, name: 'Webhooks' }).waitFor();
    await page.locator('main .page[aria-busy="false"]').waitFor();
    const rule = (await page.getByRole('region', { name: 'How deliveries are signed' }).textContent()) ?? '';
    assert.match(rule, /signed with the secret key chosen for its endpoint .* new keys never change what a receiver verifies with/);
    assert.match(rule, /revoked or its grace ends, the endpoint is disabled and says so/);
    await page.getByLabel('URL', { exact: true }).fill('http://127.0.0.1:9/keyed');
    await page.getByLabel('Description (optional)').fill('keyed');
    await page.getByLabel('Signing key', { exact: true }).selectOption(key.id);
    await page.getByRole('button', { name: 'Add endpoint' }).click();
    await page.getByRole('status').filter({ hasText: 'Endpoint http://127.0.0.1:9/keyed added' }).waitFor();
    const row = page.getByRole('region', { name: 'Webhook endpoints' }).getByRole('row').filter({ hasText: 'keyed' });
    await row.getByRole('cell', { name: `Receiver key (${key.redacted})`, exact: true }).waitFor();
    await call('POST', `/keys/${key.id}/revoke`);
    await Promise.all([page.waitForResponse((r) => r.url().includes('/admin/v1/webhook_endpoints')), page.reload()]);
    await page.locator('main .page[aria-busy="false"]').waitFor();
    await row.getByRole('cell', { name: 'Disabled: its signing key no longer works' }).waitFor();
    assert.match((await row.textContent()) ?? '', /Receiver key \(sk_live_…\w{4}\), revoked: nothing is sent until another key is chosen/);
    // Its page says so too, and choosing a working key there resumes it.
    await row.getByRole('link', { name: 'http://127.0.0.1:9/keyed' }).click();
    await page.getByRole('heading', { level: 1, name: 'Endpoint keyed' }).waitFor();
    assert.match((await page.locator('dl.facts').textContent()) ?? '', /Signing keyReceiver key .*revoked/);
    await page.getByLabel('Signing key', { exact: true }).selectOption('key_demo_secret');
    await page.getByRole('button', { name: 'Save changes' }).press('Enter');
    await page.getByRole('status').filter({ hasText: 'Saved: enabled' }).waitFor();
    assert.match((await page.locator('dl.facts').textContent()) ?? '', /Signing keyDemo secret key \(sk_live_…C9P3\)Changed/);
    const endpointId = decodeURIComponent(page.url().split('/').pop()!);
    await call('DELETE', `/webhook_endpoints/${encodeURIComponent(endpointId)}`);
    assert.deepEqual(page.problems, []);
  });

  test('every page passes axe (no serious or critical finding), light and dark, at 1280 and 360 px, without sideways scrolling', async () => {
    const hashes = everyPage();
    for (const colorScheme of ['light', 'dark'] as const) {
      for (const width of [1280, 360]) {
        await page.emulateMedia({ colorScheme });
        await page.setViewportSize({ width, height: 800 });
        for (const hash of hashes) {
          await page.goto(`${origin}/dashboard${hash}`);
          await page.locator('main h1').waitFor();
          await page.locator(`main .page[aria-busy="false"][data-route="${hash}"]`).waitFor();
          const where = `${hash} ${colorScheme} ${width}px`;
          const shot = `dashboard-${hash
            .slice(2)
            .split(/[/?]/)
            .slice(0, 2)
            .join('-')
            .replace(/=.*|-(we|evt)_[0-9a-f]+/g, '')}-${colorScheme}-${width}.png`;
          await page.screenshot({ path: path.join(ARTIFACTS, shot), fullPage: true });
          assert.deepEqual(await axe(page), [], where);
          const sideways = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
          assert.ok(sideways <= 0, `${where}: the page scrolls sideways by ${sideways}px`);
        }
      }
    }
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.emulateMedia({ colorScheme: 'light' });
    assert.deepEqual(page.problems, []);
  });

  test('by keyboard: Tab reaches every control of every page, each with a visible focus (D-99)', async () => {
    for (const hash of everyPage()) {
      await page.goto(`${origin}/dashboard${hash}`);
      await page.locator(`main .page[aria-busy="false"][data-route="${hash}"]`).waitFor();
      const r = await tabThrough(page);
      assert.ok(r.stops >= 8, `${hash}: ${r.stops} controls`);
      assert.deepEqual(r.missed, [], `${hash}: not reached by Tab`);
      assert.deepEqual(r.unseen, [], `${hash}: focus not visible`);
    }
  });

  test('a session that ends sends the page back to sign-in, saying why; sign-out ends it', async () => {
    await context.clearCookies();
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('alert').filter({ hasText: 'session has ended' }).waitFor();
    await signIn(page);
    await page.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign in to Parley' }).waitFor();
    // The cookie no longer opens a session.
    await page.reload();
    await page.getByRole('heading', { level: 1, name: 'Sign in to Parley' }).waitFor();
    assert.deepEqual(await axe(page), [], 'the sign-in page');
    const keys = await tabThrough(page);
    assert.deepEqual([keys.missed, keys.unseen], [[], []], 'the sign-in page by keyboard');
  });

  test('the page cannot be framed (frame-ancestors, D-96)', async () => {
    const framed = await context.newPage();
    const refused = framed.waitForEvent('console', (m) => /frame-ancestors/.test(m.text()));
    await framed.goto(`${origin}/openapi.json`);
    await framed.setContent(`<iframe src="${origin}/dashboard" title="framed"></iframe>`);
    // Chromium says why it refused the frame; the frame never holds the dashboard.
    await refused;
    assert.equal(await framed.frames()[1]?.locator('#root').count(), 0);
    await framed.close();
  });

  test('wrong passwords meet the back-off: the form counts down Retry-After and waits (D-69)', async () => {
    const c = await launch();
    contexts.push(c);
    const p = await open(c);
    const nobody = 'nobody@demo.example';
    // From the pair's 5th failure, each further attempt waits (D-69); an unknown email is counted alike.
    for (let i = 0; i < 12; i++) {
      await signIn(p, `wrong-${i}`, nobody);
      await p.getByRole('alert').waitFor();
      if (await p.getByText(/Too many failed sign-ins/).count()) break;
      await p.getByRole('button', { name: 'Sign in' }).and(p.locator(':enabled')).waitFor();
    }
    await p.getByText(/Too many failed sign-ins\. Try again in \d+ seconds?\./).waitFor();
    assert.equal(await p.getByRole('button', { name: 'Sign in' }).isDisabled(), true);
    await p.getByText('You can try again now.').waitFor({ timeout: 20_000 });
    assert.equal(await p.getByRole('button', { name: 'Sign in' }).isDisabled(), false);
  });

  test('a viewer sees no write control, and the admin surface refuses its writes anyway (D-65, D-96)', async () => {
    const c = await launch();
    contexts.push(c);
    const p = await open(c);
    await signIn(p, VIEWER.password, VIEWER.email);
    await p.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    await p.locator('main .page[aria-busy="false"]').waitFor();
    assert.match((await p.getByTestId('member').textContent()) ?? '', /\(viewer\)/);
    await p.getByRole('cell', { name: 'Demo secret key', exact: true }).waitFor();
    assert.equal(await p.getByRole('button', { name: /Create key|Roll|Revoke/ }).count(), 0);
    await p.getByText(/You are a viewer/).waitFor();
    // The page's own session, with its CSRF token: the write is refused for the role.
    const status = await p.evaluate(async () => {
      const s = await (await fetch('/admin/v1/session')).json();
      const r = await fetch('/admin/v1/keys', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-csrf-token': s.csrf_token },
        body: JSON.stringify({ type: 'secret', name: 'viewer key' }),
      });
      return r.status;
    });
    assert.equal(status, 403);
    assert.deepEqual(await axe(p), []);
    // Webhooks: the endpoints, their log and an event are read, with no control that writes.
    const writes = /Add endpoint|Delete|Disable|Enable|Redeliver|Save changes/;
    for (const hash of ['#/webhooks', `#/webhook/${goneEndpoint}`, `#/webhook-event/${goneEvent}`]) {
      await p.goto(`${origin}/dashboard${hash}`);
      await p.locator(`main .page[aria-busy="false"][data-route="${hash}"]`).waitFor();
      assert.equal(await p.getByRole('button', { name: writes }).count(), 0, hash);
      assert.equal(await p.locator('main form[aria-label="Endpoint settings"], main form[aria-label="Add an endpoint"]').count(), 0, hash);
    }
    await p.getByRole('region', { name: 'Deliveries' }).getByRole('link', { name: goneEndpoint }).waitFor();
  });

  test("a member of another team never sees the demo team's keys or conversations", async () => {
    const c = await launch();
    contexts.push(c);
    const p = await open(c);
    await signIn(p, OTHER.password, OTHER.email);
    await p.getByRole('heading', { level: 1, name: 'API keys' }).waitFor();
    await p.locator('main .page[aria-busy="false"]').waitFor();
    await p.getByRole('cell', { name: "Other team's secret key", exact: true }).waitFor();
    assert.equal(await p.getByText(/Demo secret key|browser key|rolled key/).count(), 0);
    await p.goto(`${origin}/dashboard#/conversations?app=${APP}&deleted=include`);
    await p
      .getByRole('alert')
      .filter({ hasText: `No app ${APP} in your team` })
      .waitFor();
    await p.goto(`${origin}/dashboard#/conversation/${APP}/${deletedId}`);
    await p.locator('main .page[aria-busy="false"]').waitFor();
    assert.equal(await p.getByText(DELETED_TITLE).count(), 0);
    assert.equal(await p.getByText(HOSTILE).count(), 0);
    // Nor its webhook endpoints, their log or their events (D-81: another team's endpoint is 404).
    await p.goto(`${origin}/dashboard#/webhooks`);
    await p.locator('main .page[aria-busy="false"]').waitFor();
    await p.getByText('No endpoints yet.').waitFor();
    for (const hash of [`#/webhook/${goneEndpoint}`, `#/webhook-event/${goneEvent}`]) {
      await p.goto(`${origin}/dashboard${hash}`);
      await p.locator(`main .page[aria-busy="false"][data-route="${hash}"]`).waitFor();
      await p.getByRole('alert').waitFor();
      assert.equal(await p.getByText(gone.url).count(), 0, hash);
    }
  });
});
