// `parley data export | parley data import -` as processes (docs/data.md): a real pipe between two
// `parley` processes moves a data directory into PostgreSQL while a PostgreSQL store is open on it (a
// served database may be exported and imported), then back into a new data directory, unchanged.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import path from 'node:path';
import { test } from 'node:test';
import { FileStore } from '../../src/store/file/file-store.ts';
import { PgStore } from '../../src/store/pg/pg-store.ts';
import { runCli, spawnCli } from '../support/cli-helpers.ts';
import { tempDir } from '../support/helpers.ts';
import { freshDatabase, usePostgres } from '../support/postgres.ts';

usePostgres();

test('file store → pipe → PostgreSQL (served meanwhile) → file → new file store: the same export', async () => {
  const a = await tempDir();
  const store = new FileStore({ dataDir: a });
  await store.open();
  for (let i = 1; i <= 50; i++) {
    await store.putConversation({
      id: `conv_pipe${String(i).padStart(3, '0')}`,
      app_id: i % 2 ? 'app_demo' : 'app_other',
      seq: await store.nextSeq(),
      created_at: 1_700_000_000 + Math.floor(i / 10),
      external_user_id: null,
      title: i % 7 ? null : `t${i}`,
      generated_title: {},
      metadata: { i },
      deleted_at: i % 11 ? null : 1_700_000_100,
      message_count: 0,
    });
  }
  await store.close();

  const url = await freshDatabase();
  const b = path.join(await tempDir(), 'b');
  // A Parley serving the database: an import and an export go on beside it.
  const served = new PgStore({ url });
  await served.open();
  try {
    const exporter = spawnCli(['data', 'export', '--data-dir', a]);
    const importer = spawnCli(['data', 'import', '-'], { env: { DATABASE_URL: url } });
    exporter.stdout.pipe(importer.stdin);
    let err = '';
    importer.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    exporter.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const [[exported], [imported]] = await Promise.all([once(exporter, 'close'), once(importer, 'close')]);
    assert.equal(exported, 0, err);
    assert.equal(imported, 0, err);
    assert.match(err, /exported 50 conversations/);
    assert.match(err, /imported 50 conversations \(0 items, 0 responses\) and 0 usage entries into the database/);

    const file = path.join(await tempDir(), 'pg.ndjson');
    const fromPg = await runCli(['data', 'export', '--database-url', url, '--output', file], { via: 'process' });
    assert.equal(fromPg.code, 0, fromPg.stderr);
    const back = await runCli(['data', 'import', file, '--data-dir', b], { via: 'process' });
    assert.equal(back.code, 0, back.stderr);
  } finally {
    await served.close();
  }
  const original = await runCli(['data', 'export', '--data-dir', a]);
  const copy = await runCli(['data', 'export', '--data-dir', b]);
  assert.equal(original.code, 0, original.stderr);
  assert.equal(original.stdout.split('\n').length, 53);
  // Everything but the header (its time and source) is the same.
  assert.equal(copy.stdout.split('\n').slice(1).join('\n'), original.stdout.split('\n').slice(1).join('\n'));
});
