// Export format version 2 (docs/data.md, D-79), the cases both stores run: test/data-control.test.ts on
// the file store, test/proof/pg-data-control.test.ts on PostgreSQL. The source is a file store whose
// control plane was changed through the API (a key made, another revoked).
import assert from 'node:assert/strict';
import { openDataPort, type DataPort, type LineSource } from '../../src/store/port/index.ts';
import { APP, KEY, startTestServer, TARGET_JSON, tempDir, type TestServer } from './helpers.ts';

export const ADMIN = TARGET_JSON.admin as { email: string; password: string };

export async function withPort<T>(where: { dataDir: string } | { databaseUrl: string }, fn: (port: DataPort) => Promise<T>): Promise<T> {
  const port = await openDataPort(where);
  try {
    return await fn(port);
  } finally {
    await port.close();
  }
}

export async function exportOf(where: { dataDir: string } | { databaseUrl: string }): Promise<string[]> {
  return withPort(where, async (port) => {
    const lines: string[] = [];
    for await (const line of port.export()) lines.push(line);
    return lines;
  });
}

export const fromLines = (lines: readonly string[]): LineSource =>
  async function* () {
    yield* lines;
  };

/** A member's personal access token on `server`. */
export async function tokenOf(server: TestServer): Promise<string> {
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

export async function adminCall(server: TestServer, token: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(`${new URL(server.baseUrl).origin}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.json();
}

export const v1 = (server: TestServer, key: string) => server.call('GET', `/apps/${APP}/config`, undefined, { key });

export type Where = { dataDir: string } | { databaseUrl: string };

export interface Source {
  lines: string[];
  made: { key: string; revokedKey: string; revokedKeyId: string; token: string };
}

/** The export of a file store whose control plane was changed through the API. */
export async function makeSource(): Promise<Source> {
  const source = await tempDir();
  const server = await startTestServer({ dataDir: source, passwordHashCost: 10 });
  let made: Source['made'];
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
  return { lines: await exportOf({ dataDir: source }), made };
}

/** A server on the store `where` (a database needs a data directory of its own too). */
async function serverOn(where: Where): Promise<TestServer> {
  return startTestServer({ ...where, dataDir: 'dataDir' in where ? where.dataDir : await tempDir(), passwordHashCost: 10 });
}

/** Restored on `where`: keys, the revocation, the member's password and the audit log are as they were. */
export async function restores({ lines, made }: Source, where: Where): Promise<void> {
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
  const server = await serverOn(where);
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
}

/** A target whose control plane was changed through the API refuses the import, and keeps what it had. */
export async function refusesChanged({ lines }: Source, where: Where): Promise<void> {
  const server = await serverOn(where);
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
