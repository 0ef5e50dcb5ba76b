// D-76: the file store's control document survives `kill -9` at any instant. A child changes
// `control.json` without pause (test/support/control-writer.ts) and is killed at many instants; each
// time the document is whole and valid, it is the last acknowledged version or the one after it (never
// older: an acknowledged change is durable), its content is the one of its version, and on reopening
// the audit log holds exactly the entries of the versions the document reached (those of a change the
// kill cut between its two writes are voided).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { ControlDoc } from '../../src/core/control.ts';
import { FileControlPlane } from '../../src/store/file/control.ts';
import { loadFixtures } from '../../src/store/fixtures.ts';
import { FIXTURES_DIR, NO_COVERAGE, tempDir } from '../support/helpers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const KILLS = 10;

/** Runs the writer on `dir` and kills it with SIGKILL after `acks` acknowledged changes and `delayMs`; the last version acknowledged. */
async function writeThenKill(dir: string, acks: number, delayMs: number): Promise<{ ready: number; acked: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/control-writer.ts', dir], {
    cwd: ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...NO_COVERAGE },
  });
  // 'close', not 'exit': every line the writer wrote before the kill has been read by then.
  const exited = new Promise<void>((r) => child.once('close', () => r()));
  let ready = -1;
  let acked = -1;
  let seen = 0;
  let buffered = '';
  let err = '';
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  try {
    await new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        buffered += d.toString();
        for (let nl = buffered.indexOf('\n'); nl !== -1; nl = buffered.indexOf('\n')) {
          const [word, n] = buffered.slice(0, nl).split(' ');
          buffered = buffered.slice(nl + 1);
          if (word === 'ready') ready = Number(n);
          else if (word === 'acked') {
            acked = Number(n);
            if (++seen === acks) setTimeout(() => child.exitCode === null && child.kill('SIGKILL'), delayMs);
          }
        }
      });
      void exited.then(() => (seen >= acks ? resolve() : reject(new Error(`the writer exited early: ${err}`))));
    });
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  }
  return { ready, acked };
}

test(`the control document is old or new, whole, after kill -9 at ${KILLS} instants of changes (D-76)`, async () => {
  const dir = await tempDir();
  const fixtures = await loadFixtures(FIXTURES_DIR);
  let lastAcked = 0;
  for (let k = 0; k < KILLS; k++) {
    const { ready, acked } = await writeThenKill(dir, 1 + (k % 4), (k * 7) % 23);
    assert.ok(
      ready >= lastAcked,
      `kill ${k}: the document the writer opened (v${ready}) is not older than v${lastAcked}, acknowledged before`,
    );
    const text = await fs.readFile(path.join(dir, 'control.json'), 'utf8');
    const doc = ControlDoc.parse(JSON.parse(text));
    // Acknowledged means durable; a change under way at the kill is there whole or not at all.
    assert.ok(doc.version >= acked, `kill ${k}: v${doc.version} on disk, v${acked} was acknowledged`);
    assert.ok(doc.version <= acked + 1, `kill ${k}: v${doc.version} is past the one change under way after v${acked}`);
    if (doc.version > 1)
      assert.equal(doc.apps.find((a) => a.id === 'app_demo')!.name, `v${doc.version}`, `kill ${k}: the content of its version`);
    // Reopened: the audit log has one entry per version reached, none of a change that never landed.
    const control = await FileControlPlane.open(dir, { fixtures });
    try {
      const entries = await control.audit.list({ team_id: 'team_demo', action: 'test.renamed', limit: 100 });
      const names = new Set(entries.data.map((e) => e.id));
      assert.equal(names.size, entries.data.length);
      assert.equal(control.read().version, doc.version);
      const renames = (await allEntries(control)).length;
      assert.equal(renames, doc.version - 1, `kill ${k}: ${renames} audit entries for versions 2…${doc.version}`);
    } finally {
      await control.close();
    }
    lastAcked = doc.version;
  }
});

async function allEntries(control: FileControlPlane): Promise<unknown[]> {
  const out: unknown[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await control.audit.list({ team_id: 'team_demo', action: 'test.renamed', limit: 100, after });
    out.push(...page.data);
    if (!page.has_more) return out;
    after = page.data.at(-1)!.id;
  }
}
