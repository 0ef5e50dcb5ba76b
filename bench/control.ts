// `npm run bench -- --control`: how long a change of the control plane made on one instance takes to
// be in effect on another (D-78: answered once every live instance holds it, 2 s at most). Two Parley
// processes on one durable embedded PostgreSQL; each round creates a key through instance A's admin
// surface, then asks instance B with it every 5 ms until B accepts it, and revokes it through A and
// asks B until B refuses it. Change-to-effect is from A being asked to B's first answer showing the
// change; A's answer, which waits for B, is timed too.
import { setTimeout as sleep } from 'node:timers/promises';
import { type Instance, startInstance } from '../test/support/fleet.ts';
import { APP, TARGET_JSON } from '../test/support/helpers.ts';
import { startBenchPostgres } from './pg.ts';
import { percentile } from './measure.ts';

export interface ControlFigures {
  rounds: number;
  /** Milliseconds, from asking A for the change to the first answer of B that shows it. */
  created: number[];
  revoked: number[];
  /** Milliseconds, A's answer to each change (both kinds). */
  answered: number[];
}

const PROBE_MS = 5;
const GIVE_UP_MS = 30_000;
/** The demo admin, as the conformance target names it (its password is written in clear only there and in the README). */
const ADMIN = TARGET_JSON.admin as { email: string; password: string };

async function statusOf(i: Instance, key: string): Promise<number> {
  const res = await fetch(`${i.base}/apps/${APP}/config`, { headers: { authorization: `Bearer ${key}` } });
  await res.arrayBuffer();
  return res.status;
}

async function admin(i: Instance, auth: Record<string, string>, method: string, path: string, body?: unknown) {
  const res = await fetch(`${i.origin}/admin/v1${path}`, {
    method,
    headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = (await res.json()) as Record<string, any>;
  if (res.status !== 200) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(answer)}`);
  return { answer, headers: res.headers };
}

/** Milliseconds until `i` answers `want` for `key`, asked every PROBE_MS. */
async function until(i: Instance, key: string, want: number, since: number): Promise<number> {
  for (;;) {
    if ((await statusOf(i, key)) === want) return performance.now() - since;
    if (performance.now() - since > GIVE_UP_MS) throw new Error(`instance B never answered ${want} within ${GIVE_UP_MS / 1000} s`);
    await sleep(PROBE_MS);
  }
}

export async function measureControl(rounds: number, log: (line: string) => void): Promise<ControlFigures> {
  const pg = await startBenchPostgres();
  const instances: Instance[] = [];
  try {
    const url = await pg.database('parley_control_bench');
    // One after the other: the first seeds the control document (D-77), the second reads it.
    instances.push(await startInstance({ databaseUrl: url }));
    instances.push(await startInstance({ databaseUrl: url }));
    const [a, b] = instances as [Instance, Instance];
    const session = await admin(a, {}, 'POST', '/sessions', ADMIN);
    const cookie = session.headers.get('set-cookie')!.split(';')[0]!;
    const token = (await admin(a, { cookie, 'x-csrf-token': session.answer.csrf_token as string }, 'POST', '/tokens', { name: 'bench' }))
      .answer.token as string;
    const auth = { authorization: `Bearer ${token}` };
    const figures: ControlFigures = { rounds, created: [], revoked: [], answered: [] };
    for (let r = 0; r < rounds; r++) {
      let asked = performance.now();
      const made = await admin(a, auth, 'POST', '/keys', { type: 'secret', name: `bench ${r}` });
      figures.answered.push(performance.now() - asked);
      figures.created.push(await until(b, made.answer.key as string, 200, asked));
      asked = performance.now();
      await admin(a, auth, 'POST', `/keys/${made.answer.id as string}/revoke`);
      figures.answered.push(performance.now() - asked);
      figures.revoked.push(await until(b, made.answer.key as string, 401, asked));
      log(
        `  round ${r + 1}/${rounds}: created → B ${figures.created.at(-1)!.toFixed(0)} ms, revoked → B ${figures.revoked.at(-1)!.toFixed(0)} ms`,
      );
    }
    return figures;
  } finally {
    await Promise.allSettled(instances.map((i) => i.stop()));
    await pg.stop();
  }
}

export function controlMarkdown(f: ControlFigures, when: string, machine: string): string {
  const row = (what: string, v: number[]) =>
    `| ${what} | ${percentile(v, 50).toFixed(0)} ms | ${percentile(v, 95).toFixed(0)} ms | ${Math.max(...v).toFixed(0)} ms | ≤ 2,000 ms |`;
  return [
    `Run ${when}, ${machine}. Two Parley processes on one durable embedded PostgreSQL; ${f.rounds} rounds; B asked every ${PROBE_MS} ms.`,
    '',
    '| change on instance A, in effect on instance B | p50 | p95 | max | target (D-78) |',
    '|---|---|---|---|---|',
    row('a key created', f.created),
    row('a key revoked', f.revoked),
    `| (A's answer to the change, which waits for B) | ${percentile(f.answered, 50).toFixed(0)} ms | ${percentile(f.answered, 95).toFixed(0)} ms | ${Math.max(...f.answered).toFixed(0)} ms | |`,
  ].join('\n');
}
