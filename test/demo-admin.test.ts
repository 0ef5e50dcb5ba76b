// D-77: the demo team's admin comes with the fixtures as a scrypt hash; its password is written in clear
// in exactly two places, the README and the conformance target (fixtures/target.json, format version 3's
// `admin`), and the target's admin signs in to the reference server.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ROOT } from './support/cli-helpers.ts';
import { startTestServer, TARGET_JSON, type TestServer } from './support/helpers.ts';

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
