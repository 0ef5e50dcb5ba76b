// D-84: a webhook event is written in the same atomic step as its change. A real server process (file
// store) creating conversations is killed with SIGKILL at a random moment while its receiver refuses
// every delivery; restarted on the same data directory with the receiver answering, every acknowledged
// conversation's `conversation.created` event arrives (verified with the secret key), and no event
// names a conversation the restarted server does not have.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { webhookSecretText, webhookSigningKey } from '../../src/core/api-keys.ts';
import { APP, FIXTURES_DIR, KEY, NO_COVERAGE, tempDir } from '../support/helpers.ts';
import { listening } from '../support/server-process.ts';
import { createEndpoint, demoAdminToken } from '../support/webhook-receiver.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SECRET = webhookSecretText(webhookSigningKey(KEY));
const cleanup: Array<() => unknown> = [];
after(async () => {
  for (const f of cleanup.reverse()) await f();
});

function startServer(dataDir: string) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/main.ts', '--port', '0', '--fixtures', FIXTURES_DIR, '--log-level', 'error', '--data-dir', dataDir],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...NO_COVERAGE, WEBHOOK_RETRY_SCHEDULE: '0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1,0.1' },
    },
  );
  const l = listening(child);
  const kill = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    return l.exited;
  };
  cleanup.push(kill);
  return { base: l.base, kill, exited: l.exited, stderr: l.stderr };
}

test('kill -9 while conversations are created: every acknowledged change event arrives after the restart, none invented', {
  timeout: 180_000,
}, async () => {
  let accepting = false;
  const received = new Map<string, { conversation: string; count: number }>();
  const waiters: Array<() => void> = [];
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (!accepting) {
        res.writeHead(503).end();
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
      const ev = new Webhook(SECRET).verify(body, headers) as { id: string; type: string; data: { id: string } };
      const seen = received.get(ev.id);
      received.set(ev.id, { conversation: ev.data.id, count: (seen?.count ?? 0) + 1 });
      res.writeHead(200).end('ok');
      for (const w of waiters.splice(0)) w();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  cleanup.push(() => new Promise((r) => receiver.close(r)));
  const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const dataDir = await tempDir('parley-webhook-crash-');
  const first = startServer(dataDir);
  const base = await first.base;
  const origin = new URL(base).origin;
  await createEndpoint(origin, await demoAdminToken(origin), url, ['conversation.created'], APP);

  // Writers create conversations until the kill; an answered create is acknowledged.
  const acknowledged: string[] = [];
  let stop = false;
  const writer = async () => {
    while (!stop) {
      try {
        const r = await fetch(`${base}/apps/${APP}/conversations`, {
          method: 'POST',
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body: '{}',
        });
        if (r.status === 200) acknowledged.push(((await r.json()) as { id: string }).id);
      } catch {
        return; // the server is gone
      }
    }
  };
  const writers = Array.from({ length: 4 }, writer);
  // Killed at a random moment once at least a few creates are acknowledged.
  while (acknowledged.length < 20 + Math.floor(Math.random() * 40)) await new Promise((r) => setImmediate(r));
  await first.kill();
  stop = true;
  await Promise.all(writers);
  assert.ok(acknowledged.length >= 20);

  accepting = true;
  const second = startServer(dataDir);
  const base2 = await second.base;
  const want = new Set(acknowledged);
  const arrived = () => new Set([...received.values()].map((v) => v.conversation));
  while (![...want].every((id) => arrived().has(id))) await new Promise<void>((r) => waiters.push(r));

  // None invented: every event names a conversation the restarted server has.
  for (const { conversation } of received.values()) {
    const r = await fetch(`${base2}/apps/${APP}/conversations/${conversation}`, { headers: { authorization: `Bearer ${KEY}` } });
    assert.equal(r.status, 200, `an event for ${conversation}, which the server does not have`);
  }
  await second.kill();
});
