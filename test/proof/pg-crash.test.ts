// Crash safety on PostgreSQL: a real server process on DATABASE_URL under a write load is killed
// with SIGKILL after a number of answered writes, and restarted on the same database, three times.
// Every answered write is there, and the restarted instance serves at once (no lock of the dead one
// to wait for: instances share the database, D-42).
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import postgres from 'postgres';
import { APP, FIXTURES_DIR, KEY, tempDir } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';
import { listening } from '../support/server-process.ts';

usePostgres();
const ROOT = path.resolve(import.meta.dirname, '../..');

async function spawnServer(url: string, dataDir: string): Promise<{ child: ChildProcess; base: string; exited: Promise<unknown> }> {
  const child = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'src/main.ts',
      '--port',
      '0',
      '--fixtures',
      FIXTURES_DIR,
      '--log-level',
      'warn',
      '--data-dir',
      dataDir,
      '--database-url',
      url,
    ],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_V8_COVERAGE: '' },
    },
  );
  const { base, exited } = listening(child);
  return { child, base: await base, exited };
}

async function call(base: string, method: string, p: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(base + p, {
    method,
    headers: { authorization: `Bearer ${KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, body: await res.json() };
}

test('SIGKILL under a write load, three times: every answered create and message is there after the restart', {
  timeout: 180_000,
}, async () => {
  const url = await freshDatabase();
  const dataDir = await tempDir();
  const conv = `/apps/${APP}/conversations`;
  /** Answered writes: conversation id → its title and the user messages answered. */
  const acked = new Map<string, { title: string; messages: string[] }>();
  let n = 0;
  for (let cycle = 0; cycle < 3; cycle++) {
    const server = await spawnServer(url, dataDir);
    let answered = 0;
    const target = 12 + cycle * 5;
    let killed = false;
    const kill = () => {
      if (killed) return;
      killed = true;
      server.child.kill('SIGKILL');
    };
    const worker = async () => {
      while (!killed) {
        const title = `t${n++}`;
        try {
          const c = await call(server.base, 'POST', conv, { title });
          if (c.status !== 200) continue;
          acked.set(c.body.id, { title, messages: [] });
          const text = `hello ${title}`;
          const r = await call(server.base, 'POST', `${conv}/${c.body.id}`, { message: { content: text }, stream: false });
          if (r.status === 200) acked.get(c.body.id)!.messages.push(text);
          if (++answered >= target) kill();
        } catch {
          return; // the connection went with the process
        }
      }
    };
    await Promise.all([worker(), worker(), worker()]);
    await server.exited;
  }
  const server = await spawnServer(url, dataDir);
  try {
    assert.ok(acked.size >= 36);
    // In the database, not in the data directory.
    const sql = postgres(url, { max: 1 });
    const rows = await sql`SELECT id FROM conversations WHERE id = ANY(${[...acked.keys()]})`.finally(() => sql.end());
    assert.equal(rows.length, acked.size);
    for (const [id, want] of acked) {
      const r = await call(server.base, 'GET', `${conv}/${id}`);
      assert.equal(r.status, 200, `${id} was answered, then lost`);
      assert.equal(r.body.title, want.title);
      const users = r.body.items
        .filter((i: { role?: string }) => i.role === 'user')
        .map((i: { content: { text: string }[] }) => i.content[0]!.text);
      for (const m of want.messages) assert.ok(users.includes(m), `${id}: the answered message "${m}" was lost`);
    }
  } finally {
    server.child.kill('SIGTERM');
    await server.exited;
  }
});
