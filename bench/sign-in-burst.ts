// `npm run bench -- --sign-in-burst`: what a burst of sign-ins at the production hash cost (15) does
// to /v1 (D-166: hashing on a worker thread of its own at the lowest CPU priority). Parley on the file
// store in its own process, as `npm start` runs it; creates of conversations one at a time, timed, in
// alternating rounds: with nothing else, then while attackers keep a number of wrong sign-ins in
// flight. Each attacker's request comes from an address of its own (127.x.y.z: loopback is the whole
// of 127/8) with an email of its own, so D-69's throttle never holds them back and every one asks for
// a hash; one answered 503 `sign_in_busy` comes back after its Retry-After.
import http from 'node:http';
import path from 'node:path';
import { PARLEY_ENV, startChild } from './child.ts';
import { AUTH } from './data.ts';
import { percentile } from './measure.ts';

export interface SignInBurstFigures {
  creates: number;
  attackers: number;
  /** Milliseconds of each create, with nothing else and during the burst. */
  idle: number[];
  burst: number[];
  /** The sign-ins' answers during the burst, by status. */
  answers: Record<string, number>;
  burstSeconds: number;
}

const APP = 'app_demo';

/** One request on a connection of its own from `localAddress`; its status and how long it took. */
function request(port: number, method: string, url: string, body: string, headers: Record<string, string>, localAddress?: string) {
  return new Promise<{ status: number; ms: number }>((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: url,
        localAddress,
        agent: false,
        headers: { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0 }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function creates(port: number, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const r = await request(port, 'POST', `/v1/apps/${APP}/conversations`, '{}', AUTH);
    if (r.status !== 200) throw new Error(`create: status ${r.status}`);
    out.push(r.ms);
  }
  return out;
}

/** Attackers keeping a wrong sign-in each in flight until `stop()`, which resolves once they are all back. */
function attack(port: number, attackers: number, answers: Record<string, number>, from: number) {
  let running = true;
  let seq = from;
  const attacker = async () => {
    while (running) {
      const i = seq++;
      const address = `127.${10 + ((i >> 16) & 0xff)}.${(i >> 8) & 0xff}.${i & 0xff}`;
      const body = JSON.stringify({ email: `attacker${i}@example.com`, password: 'a wrong guess' });
      const r = await request(port, 'POST', '/admin/v1/sessions', body, {}, address);
      answers[r.status] = (answers[r.status] ?? 0) + 1;
      // A refused attacker comes back after Retry-After (1 s): the pool stays full (60 > 1 + 16), and
      // what is measured is hashing beside /v1, not a flood of requests (the rate limits' business).
      if (r.status === 503) await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  };
  const loops = Array.from({ length: attackers }, attacker);
  return {
    stop: async () => {
      running = false;
      await Promise.all(loops);
      return seq;
    },
  };
}

export async function measureSignInBurst(fixturesDir: string, tmp: string, quick: boolean, log: (line: string) => void) {
  const rounds = quick ? 2 : 5;
  const perRound = 80;
  const attackers = 60;
  const child = await startChild('parley-server.ts', [path.join(tmp, 'data-sign-in-burst'), fixturesDir], {
    env: { ...PARLEY_ENV, PASSWORD_HASH_COST: '' },
  });
  try {
    const port = child.ready.port;
    await creates(port, 20);
    const f: SignInBurstFigures = { creates: rounds * perRound, attackers, idle: [], burst: [], answers: {}, burstSeconds: 0 };
    // Idle and burst in alternating rounds, so that the machine's other work weighs on both alike.
    let seq = 0;
    for (let r = 0; r < rounds; r++) {
      const idle = await creates(port, perRound);
      const t0 = performance.now();
      const burst = attack(port, attackers, f.answers, seq);
      // The pool's queue is full within the first second; creates are timed from then on.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const during = await creates(port, perRound);
      seq = await burst.stop();
      f.burstSeconds += (performance.now() - t0) / 1000;
      f.idle.push(...idle);
      f.burst.push(...during);
      log(
        `  round ${r + 1}/${rounds}: create p95 idle ${percentile(idle, 95).toFixed(1)} ms, during the burst ${percentile(during, 95).toFixed(1)} ms`,
      );
    }
    log(`  sign-ins during the bursts: ${JSON.stringify(f.answers)}`);
    return f;
  } finally {
    await child.stop();
  }
}

export function signInBurstMarkdown(f: SignInBurstFigures, when: string, machine: string): string {
  const p = (v: number[], q: number) => `${percentile(v, q).toFixed(1)} ms`;
  const ratio = percentile(f.burst, 95) / percentile(f.idle, 95);
  const checked = f.answers['401'] ?? 0;
  return [
    `Run ${when}, ${machine}. Parley on the file store in its own process at the production hash cost (15); ${f.creates} creates one at a time, in alternating rounds of 80 idle and 80 while ${f.attackers} attackers keep a wrong sign-in each in flight (back after Retry-After when refused busy), every one from an address and for an email of its own.`,
    '',
    '| figure | idle | during the burst | target (D-166) |',
    '|---|---|---|---|',
    `| create conversation p50 | ${p(f.idle, 50)} | ${p(f.burst, 50)} | |`,
    `| create conversation p95 | ${p(f.idle, 95)} | ${p(f.burst, 95)} (${ratio.toFixed(2)} ×) | within 3 × idle: ${ratio <= 3 ? 'met' : 'NOT met'} |`,
    `| create conversation max | ${Math.max(...f.idle).toFixed(1)} ms | ${Math.max(...f.burst).toFixed(1)} ms | |`,
    `| sign-ins answered in the bursts' ${f.burstSeconds.toFixed(1)} s: checked (401), refused busy (503) | | ${checked} (${(checked / f.burstSeconds).toFixed(1)} a second), ${f.answers['503'] ?? 0} | |`,
  ].join('\n');
}
