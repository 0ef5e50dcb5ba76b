// The dashboard's audit log in Chromium (docs/dashboard.md, D-75): every known action suggested, a
// key's target by the name the keys page shows, a change's time as a date (not Unix seconds) and a
// failed sign-in's actor as anonymous with its address.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { AUDIT_ACTIONS } from '../../src/contract/audit-actions.ts';
import { adminClient, bearer, DEMO_ADMIN, TEST_HASH_COST } from '../support/admin-client.ts';
import { chromiumMissing, launch } from '../support/browser.ts';
import { startTestServer, type TestServer } from '../support/helpers.ts';

const skip = chromiumMissing();
const KEY_NAME = 'Nightly export';

let parley: TestServer;
let context: BrowserContext;
let origin: string;
let revokedAt = 0;

before(async () => {
  if (skip) return;
  parley = await startTestServer({ passwordHashCost: TEST_HASH_COST });
  origin = new URL(parley.baseUrl).origin;
  const admin = adminClient(origin);
  const auth = bearer(await admin.token(DEMO_ADMIN.email, DEMO_ADMIN.password));
  const made = await admin.call('POST', '/keys', { type: 'secret', name: KEY_NAME }, auth);
  assert.equal(made.status, 200);
  const revoked = await admin.call('POST', `/keys/${made.body.id}/revoke`, {}, auth);
  assert.equal(revoked.status, 200);
  revokedAt = revoked.body.revoked_at;
  assert.equal((await admin.call('POST', '/sessions', { email: DEMO_ADMIN.email, password: 'not-the-password' })).status, 401);
  context = await launch();
});

after(async () => {
  await context?.close().catch(() => {});
  await parley?.close();
});

async function auditFiltered(page: Page, action: string) {
  await page.getByLabel('Action').fill(action);
  await page.getByRole('button', { name: 'Filter' }).click();
  // The page drawn for the filter: every row's action is the one asked for.
  await page.waitForFunction((a) => {
    const cells = [...document.querySelectorAll('main tbody tr td:nth-child(2)')];
    return cells.length > 0 && cells.every((c) => c.textContent === a);
  }, action);
  return page.getByRole('region', { name: 'Audit entries' }).getByRole('row').nth(1);
}

test('the audit page: every action suggested, a key by its name, times as dates, a failed sign-in anonymous', { skip }, async () => {
  const page = await context.newPage();
  await page.goto(`${origin}/dashboard#/audit`);
  await page.getByLabel('Email').fill(DEMO_ADMIN.email);
  await page.getByLabel('Password').fill(DEMO_ADMIN.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('region', { name: 'Audit entries' }).waitFor();
  const suggested = await page.locator('#audit-actions option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
  assert.deepEqual(suggested, [...AUDIT_ACTIONS]);

  const revoked = await auditFiltered(page, 'key.revoked');
  assert.match((await revoked.getByRole('cell').nth(3).textContent()) ?? '', new RegExp(`key “${KEY_NAME}”`));
  await revoked.getByText('Changes').click();
  const changes = (await revoked.locator('pre').textContent()) ?? '';
  assert.match(changes, /^revoked_at: null → \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
  assert.equal(changes.includes(String(revokedAt)), false, `no raw Unix seconds: ${changes}`);

  const created = await auditFiltered(page, 'key.created');
  await created.getByText('Changes').click();
  const made = (await created.locator('pre').textContent()) ?? '';
  assert.match(made, new RegExp(`name: null → "${KEY_NAME}"`));
  assert.match(made, /type: null → "secret"/);

  const failed = await auditFiltered(page, 'session.failed');
  assert.equal(await failed.getByRole('cell').nth(2).textContent(), 'anonymous from 127.0.0.1');
});
