// `parley data export|import` on the file store, in-process (docs/data.md; PostgreSQL and real pipes
// between two processes: test/proof/cli-data.test.ts): stdout and --output, stdin and a file, the summary
// on stderr, and the exit codes: 1 for a clash or a bad file (naming the id or line), 2 for a usage error.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { FileStore } from '../src/store/file/file-store.ts';
import { procStat } from '../src/store/file/dir-lock.ts';
import type { ConversationRecord } from '../src/store/types.ts';
import { record } from './support/records.ts';
import { runCli } from './support/cli-helpers.ts';
import { FIXTURES_DIR, tempDir } from './support/helpers.ts';

async function seeded(): Promise<string> {
  const dir = await tempDir();
  const store = new FileStore({ dataDir: dir });
  await store.open();
  const rec = async (id: string, over: Partial<ConversationRecord> = {}): Promise<ConversationRecord> =>
    record(id, { seq: await store.nextSeq(), ...over });
  await store.putConversation(await rec('conv_cli1', { title: 'First' }));
  await store.putConversation(await rec('conv_cli2', { metadata: { k: 'v' } }));
  await store.saveResponse({
    conversationId: 'conv_cli1',
    items: [
      {
        id: 'msg_1',
        type: 'message',
        role: 'user',
        content: [{ type: 'text', text: 'hi' }],
        created_at: 1_700_000_001,
        response_id: 'resp_1',
      } as never,
    ],
    response: { id: 'resp_1', created_at: 1_700_000_001, status: 'failed', error: { type: 'server_error', message: 'no', code: null } },
    apply: (r) => ({ message_count: r.message_count + 1 }),
  });
  await store.close();
  await fs.writeFile(
    path.join(dir, 'usage.jsonl'),
    `${JSON.stringify({ t: 'usage', app_id: 'app_demo', kind: 'completion', id: 'cmpl_1', at: 1_700_000_002, input_tokens: 1, output_tokens: 2 })}\n`,
  );
  return dir;
}

test('export to stdout, import from stdin into a new directory, export again: the same data; counts on stderr', async () => {
  const a = await seeded();
  const out = await runCli(['data', 'export', '--data-dir', a]);
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stderr, /^exported 2 conversations \(1 item, 1 response\) and 1 usage entry from /);
  const lines = out.stdout.trimEnd().split('\n');
  assert.equal(JSON.parse(lines[0]!).format, 'parley-export');
  assert.equal(lines.length, 5);

  const b = path.join(await tempDir(), 'new');
  const imported = await runCli(['data', 'import', '-'], { input: out.stdout, env: { DATA_DIR: b } });
  assert.equal(imported.code, 0, imported.stderr);
  assert.equal(imported.stderr, `imported 2 conversations (1 item, 1 response) and 1 usage entry into ${b}\n`);

  const file = path.join(await tempDir(), 'again.ndjson');
  // A flag wins over the environment: DATABASE_URL exported does not redirect --data-dir.
  const again = await runCli(['data', 'export', '--data-dir', b, '--output', file], {
    env: { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none' },
  });
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, '');
  assert.deepEqual((await fs.readFile(file, 'utf8')).trimEnd().split('\n').slice(1), lines.slice(1));
  // Only the export is left beside it (its temporary file was renamed).
  assert.deepEqual(await fs.readdir(path.dirname(file)), ['again.ndjson']);
});

test('a clash, an unknown version, a file cut short: exit 1 naming the id or the line; nothing imported', async () => {
  const a = await seeded();
  const file = path.join(await tempDir(), 'export.ndjson');
  assert.equal((await runCli(['data', 'export', '--data-dir', a, '--output', file])).code, 0);
  const journal = await fs.readFile(path.join(a, 'conversations.jsonl'));

  const clash = await runCli(['data', 'import', file, '--data-dir', a]);
  assert.equal(clash.code, 1);
  assert.equal(clash.stderr, `error: ${file}: line 2: conversation conv_cli1 already exists in ${a}; nothing was imported\n`);
  assert.deepEqual(await fs.readFile(path.join(a, 'conversations.jsonl')), journal);

  const lines = (await fs.readFile(file, 'utf8')).trimEnd().split('\n');
  const v9 = [JSON.stringify({ ...JSON.parse(lines[0]!), version: 9 }), ...lines.slice(1)].join('\n');
  const b = await tempDir();
  const newer = await runCli(['data', 'import', '-', '--data-dir', b], { input: v9 });
  assert.equal(newer.code, 1);
  assert.match(newer.stderr, /^error: stdin: line 1: format version 9 is not supported: this Parley reads versions 1 and 2/);
  const cut = await runCli(['data', 'import', '-', '--data-dir', b], { input: `${lines.slice(0, 3).join('\n')}\n` });
  assert.equal(cut.code, 1);
  assert.match(cut.stderr, /line 3: the file ends without its end line: it was cut short/);
  const empty = new FileStore({ dataDir: b });
  await empty.open();
  assert.equal((await empty.conversationsOf('app_demo')).length, 0);
  await empty.close();
});

test("D-94: an export names its apps and their teams; an import checks them against the target's fixtures (--fixtures)", async () => {
  const a = await seeded();
  const out = await runCli(['data', 'export', '--data-dir', a, '--fixtures', FIXTURES_DIR]);
  assert.equal(out.code, 0, out.stderr);
  const lines = out.stdout.trimEnd().split('\n');
  assert.equal(JSON.parse(lines[0]!).apps.app_demo, 'team_demo');
  assert.equal(JSON.parse(lines[0]!).apps.app_other, 'team_other');
  // Fixtures in which app_demo belongs to another team: refused, naming the line and both teams.
  const fixtures = await tempDir();
  await fs.cp(FIXTURES_DIR, fixtures, { recursive: true });
  const f = JSON.parse(await fs.readFile(path.join(fixtures, 'fixtures.json'), 'utf8'));
  f.apps.find((x: { id: string }) => x.id === 'app_demo').team_id = 'team_other';
  await fs.writeFile(path.join(fixtures, 'fixtures.json'), JSON.stringify(f));
  const b = await tempDir();
  const moved = await runCli(['data', 'import', '-', '--data-dir', b, '--fixtures', fixtures], { input: out.stdout });
  assert.equal(moved.code, 1);
  assert.equal(moved.stderr, 'error: stdin: line 2: app app_demo belongs to team_demo in the file, to team_other in the target\n');
  // An app the target does not have (FIXTURES, as parley serve reads it).
  f.apps.splice(
    f.apps.findIndex((x: { id: string }) => x.id === 'app_demo'),
    1,
  );
  await fs.writeFile(path.join(fixtures, 'fixtures.json'), JSON.stringify(f));
  const unknown = await runCli(['data', 'import', '-', '--data-dir', b], { input: out.stdout, env: { FIXTURES: fixtures } });
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /^error: stdin: line 2: app app_demo does not exist in the target/);
  const ok = await runCli(['data', 'import', '-', '--data-dir', b, '--fixtures', FIXTURES_DIR], { input: out.stdout });
  assert.equal(ok.code, 0, ok.stderr);
});

test('usage errors exit 2; a served data directory is refused (exit 1) naming its process', async () => {
  const a = await seeded();
  const both = await runCli(['data', 'export', '--data-dir', a, '--database-url', 'postgres://x@127.0.0.1/db']);
  assert.equal(both.code, 2);
  assert.match(both.stderr, /give --database-url or --data-dir, not both/);
  const missing = await runCli(['data', 'import', path.join(a, 'nope.ndjson'), '--data-dir', a]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read .*nope\.ndjson: no such file/);
  const noArg = await runCli(['data', 'import', '--data-dir', a]);
  assert.equal(noArg.code, 2);
  const noDir = await runCli(['data', 'export', '--data-dir', path.join(a, 'absent')]);
  assert.equal(noDir.code, 2);
  assert.match(noDir.stderr, /absent: no such data directory/);
  const scheme = await runCli(['data', 'export'], { env: { DATABASE_URL: 'mysql://u:secret@h/db' } });
  assert.equal(scheme.code, 2);
  assert.doesNotMatch(scheme.stderr, /secret/);
  const output = await runCli(['data', 'export', '--data-dir', a, '--output', path.join(a, 'no', 'such', 'dir.ndjson')]);
  assert.equal(output.code, 2, output.stderr);
  assert.match(output.stderr, /--output: cannot write .*dir\.ndjson: ENOENT/);

  // The test runner (our parent) is running and is not this process: its LOCK holds.
  const stat = procStat(process.ppid);
  if (!stat) return;
  const boot = (await fs.readFile('/proc/sys/kernel/random/boot_id', 'utf8')).trim();
  await fs.writeFile(path.join(a, 'LOCK'), JSON.stringify({ pid: process.ppid, start: stat.start, boot }));
  const served = await runCli(['data', 'export', '--data-dir', a]);
  assert.equal(served.code, 1);
  assert.match(
    served.stderr,
    new RegExp(`^error: cannot export .*: a running Parley serves it \\(pid ${process.ppid}\\); stop that server first`),
  );
  assert.equal(served.stdout, '');
});
