// Where the main thread's time goes when a send has three webhook endpoints: `node --import tsx
// bench/lab/profile-webhooks.ts [treeRoot=.] [sends=500]`. Parley (from this checkout or another) runs
// with --cpu-prof; sends one at a time with three endpoints subscribed to every event, a receiver in this
// process answering 204; then prints, per thread, its busy time per send and the inclusive time per send
// of the webhook code (and of node's HTTP client, worker messaging and the journal) on it.
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { APP, KEY, TARGET_JSON } from '../../test/support/helpers.ts';
import { startChild } from '../child.ts';
import { type Profile, profileTimes } from './cpu-profile.ts';
import { benchFixtures } from '../data.ts';

const [rootArg = '.', sendsText = '500'] = process.argv.slice(2);
const root = path.resolve(rootArg);
const sends = Number(sendsText);
const tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-profwh-'));

const json = (o: string, method: string, p: string, headers: Record<string, string>, body?: unknown) =>
  fetch(o + p, {
    method,
    headers: { ...headers, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

try {
  const fixtures = await benchFixtures(path.join(tmp, 'fixtures'));
  const receiver = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  const dir = path.join(tmp, 'profiles');
  const child = await startChild(path.join(root, 'bench', 'parley-server.ts'), [path.join(tmp, 'data'), fixtures], {
    execArgv: ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval=200'],
    env: { PARLEY_MODEL: '', OLLAMA_HOST: '', LOG_LEVEL: 'silent', DATABASE_URL: '' },
  });
  const o = `http://127.0.0.1:${child.ready.port}`;
  const s = await json(o, 'POST', '/admin/v1/sessions', {}, TARGET_JSON.admin);
  const csrf = ((await s.json()) as { csrf_token: string }).csrf_token;
  const cookie = s.headers.get('set-cookie')!.split(';')[0]!;
  const token = (
    (await (await json(o, 'POST', '/admin/v1/tokens', { cookie, 'x-csrf-token': csrf }, { name: 'p' })).json()) as { token: string }
  ).token;
  for (let e = 0; e < 3; e++)
    await json(o, 'POST', '/admin/v1/webhook_endpoints', { authorization: `Bearer ${token}` }, { app_id: APP, url: hook, events: ['*'] });
  const auth = { authorization: `Bearer ${KEY}` };
  const conv = ((await (await json(o, 'POST', `/v1/apps/${APP}/conversations`, auth, {})).json()) as { id: string }).id;
  for (let i = 0; i < sends; i++)
    await (
      await json(o, 'POST', `/v1/apps/${APP}/conversations/${conv}`, auth, {
        message: { content: 'What are the API rate limits?' },
        stream: false,
      })
    ).text();
  await new Promise((r) => setTimeout(r, 300));
  await child.stop();
  receiver.close();
  const pattern = /webhook|worker_threads|internal\/worker|_http_client|_http_agent|journal|outbox/i;
  for (const f of (await fs.readdir(dir)).sort()) {
    const p = JSON.parse(await fs.readFile(path.join(dir, f), 'utf8')) as Profile;
    const { self, byId, incl } = profileTimes(p);
    let busy = 0;
    for (const [id, t] of self) if (!/^\((idle|program|garbage collector)\)$/.test(byId.get(id)!.callFrame.functionName)) busy += t;
    const per = (t: number) => `${(t / 1000 / sends).toFixed(3)} ms`;
    console.log(`${f}: busy ${per(busy)} per send (start-up included; idle, program and GC left out)`);
    for (const [k, t] of [...incl]
      .filter(([k]) => pattern.test(k))
      .sort((a, b) => b[1] - a[1])
      .slice(0, 16))
      console.log(`  ${per(t)}  ${k}`);
  }
} finally {
  await fs.rm(tmp, { recursive: true, force: true });
}
