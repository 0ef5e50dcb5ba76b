// D-77: the demo team's admin comes with the fixtures as a scrypt hash; its password is written in clear
// in exactly two places, the README and the conformance target (fixtures/target.json, format version 3's
// `admin`), and the target's admin signs in to the reference server.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import pino from 'pino';
import { adminGet, adminToken } from './support/admin-token.ts';
import { ROOT } from './support/cli-helpers.ts';
import { startTestServer, TARGET_JSON, type TestServer, tempDir } from './support/helpers.ts';

const ADMIN = TARGET_JSON.admin as { email: string; password: string; base_url?: string };
/** Folders that are not the project's own text: dependencies, the repository, the tests (which read the target) and their build. */
const SKIP = new Set(['node_modules', '.git', '.test-build', 'test', 'data', 'coverage', 'test-artifacts']);

function filesWith(needle: string, dir = ROOT): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (!SKIP.has(entry.name)) found.push(...filesWith(needle, full));
    } else if (entry.isFile() && fs.statSync(full).size < 4_000_000 && fs.readFileSync(full, 'utf8').includes(needle)) {
      found.push(path.relative(ROOT, full).split(path.sep).join('/'));
    }
  }
  return found;
}

let server: TestServer;
before(async () => {
  server = await startTestServer({ passwordHashCost: 10 });
});
after(() => server.close());

test("the demo admin's password is in clear in exactly the README and fixtures/target.json", () => {
  assert.equal(ADMIN.email, 'admin@demo.example');
  assert.ok(ADMIN.password.length >= 8);
  assert.deepEqual(filesWith(ADMIN.password).sort(), ['README.md', 'fixtures/target.json']);
  assert.match(fs.readFileSync(path.join(ROOT, 'fixtures/fixtures.json'), 'utf8'), /"scrypt\$/);
});

test("the target's admin signs in to the reference server at base_url's origin + /admin/v1", async () => {
  const res = await fetch(`${new URL(server.baseUrl).origin}/admin/v1/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email: ADMIN.email, password: ADMIN.password }),
  });
  assert.equal(res.status, 200);
  assert.equal(((await res.json()) as { member: { role: string } }).member.role, 'admin');
});

test('D-77: the demo records are dated at their seeding; a sign-in then a restart: no "differ from the fixtures" warning, same dates', async () => {
  const dataDir = await tempDir();
  const lines: string[] = [];
  const logger = () => pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
  const before = Math.floor(Date.now() / 1000);
  const first = await startTestServer({ passwordHashCost: 10, dataDir, logger: logger() });
  let keys: Array<{ id: string; created_at: number }>;
  try {
    const token = await adminToken(first.baseUrl);
    keys = (await adminGet(first.baseUrl, token, '/keys')).body.data;
    const demo = keys.find((k) => k.id === 'key_demo_secret');
    assert.ok(demo && demo.created_at >= before, `the demo key is dated at its seeding: ${demo?.created_at}`);
  } finally {
    await first.close();
  }
  lines.length = 0;
  const second = await startTestServer({ passwordHashCost: 10, dataDir, logger: logger() });
  try {
    assert.ok(!lines.some((l) => l.includes('differ from the fixtures')), lines.join('\n'));
    const token = await adminToken(second.baseUrl);
    const again = (await adminGet(second.baseUrl, token, '/keys')).body.data as typeof keys;
    const dates = (ks: typeof keys) => ks.filter((k) => k.id.startsWith('key_demo')).map((k) => [k.id, k.created_at]);
    assert.deepEqual(dates(again), dates(keys), 'not re-dated by the restart');
  } finally {
    await second.close();
  }
});
