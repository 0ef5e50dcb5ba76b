// Export format version 2 (docs/data.md, D-79): `parley data export|import` carry the control plane, the
// document with its hashes and the audit log, so that a restore on either store keeps every key, token,
// revocation and password as it was; a target whose control plane was changed is refused, whole.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { openDataPort, type DataPort, type LineSource } from '../src/store/port/index.ts';
import { APP, KEY, startTestServer, TARGET_JSON, tempDir, type TestServer } from './support/helpers.ts';
import { freshDatabase, usePostgres } from './support/postgres.ts';

usePostgres();

const ADMIN = TARGET_JSON.admin as { email: string; password: string };

async function withPort<T>(where: { dataDir: string } | { databaseUrl: string }, fn: (port: DataPort) => Promise<T>): Promise<T> {
  const port = await openDataPort(where);
  try {
    return await fn(port);
  } finally {
    await port.close();
  }
}

async function exportOf(where: { dataDir: string } | { databaseUrl: string }): Promise<string[]> {
  return withPort(where, async (port) => {
    const lines: string[] = [];
    for await (const line of port.export()) lines.push(line);
    return lines;
  });
}

const fromLines = (lines: readonly string[]): LineSource =>
  async function* () {
    yield* lines;
  };

/** A member's personal access token on `server`. */
async function tokenOf(server: TestServer): Promise<string> {
  const admin = `${new URL(server.baseUrl).origin}/admin/v1`;
  const s = await fetch(`${admin}/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(ADMIN),
  });
  assert.equal(s.status, 200);
  const session = (await s.json()) as { csrf_token: string };
  const cookie = s.headers.get('set-cookie')!.split(';')[0]!;
  const t = await fetch(`${admin}/tokens`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': session.csrf_token },
    body: JSON.stringify({ name: 'export test' }),
  });
  return ((await t.json()) as { token: string }).token;
}

async function adminCall(server: TestServer, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${new URL(server.baseUrl).origin}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.json();
}

const v1 = (server: TestServer, key: string) => server.call('GET', `/apps/${APP}/config`, undefined, { key });

/** The source: a file store whose control plane was changed through the API. */
let source: string;
let made: { key: string; revokedKey: string; revokedKeyId: string; token: string };
let lines: string[];
before(async () => {
  source = await tempDir();
  const server = await startTestServer({ dataDir: source, passwordHashCost: 10 });
  try {
    const token = await tokenOf(server);
    const key = (await adminCall(server, token, 'POST', '/keys', { type: 'secret', name: 'kept' })).key as string;
    const victim = await adminCall(server, token, 'POST', '/keys', { type: 'secret', name: 'revoked' });
    await adminCall(server, token, 'POST', `/keys/${victim.id}/revoke`);
    assert.equal((await v1(server, victim.key)).status, 401);
    made = { key, revokedKey: victim.key, revokedKeyId: victim.id, token };
    await server.call('POST', `/apps/${APP}/conversations`, { title: 'carried' });
  } finally {
    await server.close();
  }
  lines = await exportOf({ dataDir: source });
});

describe('export format version 2: the control plane travels (D-79)', () => {
  test('the header says version 2; a control line right after it; the audit log oldest first; counted in the end line', () => {
    const parsed = lines.map((l) => JSON.parse(l));
    assert.equal(parsed[0].version, 2);
    assert.equal(parsed[1].type, 'control');
    const doc = parsed[1].document;
    assert.ok(
      doc.members.some((m: { email: string; password_hash: string }) => m.email === ADMIN.email && m.password_hash.startsWith('scrypt$')),
    );
    assert.ok(doc.keys.some((k: { id: string; revoked_at: number | null }) => k.id === made.revokedKeyId && k.revoked_at !== null));
    // A key is carried as its hash, never in clear.
    assert.equal(
      lines.some((l) => l.includes(made.key) || l.includes(made.token)),
      false,
    );
    const audit = parsed.filter((l) => l.type === 'audit').map((l) => l.entry.action);
    assert.deepEqual(
      audit.filter((a: string) => a.startsWith('key.')),
      ['key.created', 'key.created', 'key.revoked'],
    );
    const end = parsed.at(-1);
    assert.deepEqual([end.type, end.control, end.audit], ['end', 1, audit.length]);
  });

  for (const kind of ['file', 'postgres'] as const) {
    test(`restored on ${kind}: keys, the revocation, the member's password and the audit log are as they were`, async () => {
      const where = kind === 'file' ? { dataDir: await tempDir() } : { databaseUrl: await freshDatabase() };
      const counts = await withPort(where, (p) => p.import(fromLines(lines)));
      assert.equal(counts.control, 1);
      // It exports again as it came: the same document but its version (moved past both), the same audit log.
      const first = lines.map((l) => JSON.parse(l));
      const again = (await exportOf(where)).map((l) => JSON.parse(l));
      const { version: before, ...doc } = first[1].document;
      const { version: now, ...restored } = again[1].document;
      assert.deepEqual(restored, doc);
      assert.ok(now > before);
      assert.deepEqual(
        again.filter((l) => l.type === 'audit'),
        first.filter((l) => l.type === 'audit'),
      );
      const server = await startTestServer({
        ...where,
        dataDir: 'dataDir' in where ? where.dataDir : await tempDir(),
        passwordHashCost: 10,
      });
      try {
        assert.equal((await v1(server, made.key)).status, 200, 'a key made on the source works');
        assert.equal((await v1(server, made.revokedKey)).status, 401, 'a revoked key stays revoked');
        assert.equal((await v1(server, KEY)).status, 200);
        assert.equal((await server.call('GET', `/apps/${APP}/conversations`)).body.data[0].title, 'carried');
        // The member's password hash came along: the admin signs in with the same password.
        const token = await tokenOf(server);
        const audit = await adminCall(server, token, 'GET', '/audit?action=key.revoked');
        assert.equal(audit.data[0].target.id, made.revokedKeyId);
      } finally {
        await server.close();
      }
    });
  }

  test('a target whose control plane was changed is refused, and nothing is imported', async () => {
    for (const make of [async () => ({ dataDir: await tempDir() }), async () => ({ databaseUrl: await freshDatabase() })]) {
      const where = await make();
      const server = await startTestServer({
        ...where,
        dataDir: 'dataDir' in where ? where.dataDir : await tempDir(),
        passwordHashCost: 10,
      });
      try {
        await adminCall(server, await tokenOf(server), 'POST', '/keys', { type: 'secret', name: 'own' });
      } finally {
        await server.close();
      }
      const before = await exportOf(where);
      await assert.rejects(
        withPort(where, (p) => p.import(fromLines(lines))),
        /line 2: the control plane of .* has changes of its own .*token\.created.*nothing was imported/,
      );
      assert.deepEqual((await exportOf(where)).slice(1), before.slice(1), 'the target is as it was');
    }
  });

  test('a bad control line or audit line is refused with its line', async () => {
    const where = { dataDir: await tempDir() };
    const badDoc = lines.map((l, i) => (i === 1 ? l.replace('"teams":[', '"teams":[{"id":7},') : l));
    await assert.rejects(
      withPort(where, (p) => p.import(fromLines(badDoc))),
      /line 2: document\.teams\.0/,
    );
    const late = [lines[0]!, ...lines.slice(2, -1), lines[1]!, lines.at(-1)!];
    await assert.rejects(
      withPort(where, (p) => p.import(fromLines(late))),
      /a control line comes once, right after the header/,
    );
    const twice = lines.findIndex((l) => l.includes('"type":"audit"'));
    const dup = [...lines.slice(0, -1), lines[twice]!, lines.at(-1)!];
    await assert.rejects(
      withPort(where, (p) => p.import(fromLines(dup))),
      /appears twice in the file/,
    );
  });
});
