// openBackend (src/store/backend.ts): the one place that opens every concern kept beside conversations,
// from the data directory here (PostgreSQL's: test/pg-server.test.ts, test/pg-shared.test.ts), and the
// one close of them all.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import pino from 'pino';
import { DEFAULTS } from '../src/config.ts';
import { DataFileError } from '../src/core/errors.ts';
import { type BackendOptions, type ChangeSources, openBackend } from '../src/store/backend.ts';
import { FileStore } from '../src/store/file/file-store.ts';
import { type ChangeEvents, NO_CHANGE_EVENTS } from '../src/store/types.ts';
import { FIXTURES_DIR, tempDir } from './support/helpers.ts';
import { outboxEvent } from './support/outbox-suite.ts';
import { record } from './support/records.ts';

const options = (dataDir: string): BackendOptions => ({
  dataDir,
  databaseUrl: null,
  fixturesDir: FIXTURES_DIR,
  widgetSecret: null,
  databasePoolSize: DEFAULTS.databasePoolSize,
  auditRetentionDays: DEFAULTS.auditRetentionDays,
  webhookRetentionMs: DEFAULTS.webhookRetentionMs,
  logger: pino({ level: 'silent' }),
  changeEvents: () => NO_CHANGE_EVENTS,
});

describe('openBackend on the data directory', () => {
  test('opens every concern from the directory; one close() closes them all (called again, it does nothing more)', async () => {
    const dir = await tempDir();
    const backend = await openBackend(options(dir));
    assert.ok(backend.store instanceof FileStore);
    assert.ok(backend.tenants.apps.size > 0, 'the tenant registry is read');
    assert.ok(existsSync(path.join(dir, 'LOCK')), 'the store holds the directory');
    // The REST plans and the widget budgets count apart (D-52).
    const plan = await backend.rateCounts.plan.take('app_x', 1, 10);
    const widget = await backend.rateCounts.widget.take('app_x', 1, 10);
    assert.deepEqual([plan.taken, widget.taken], [true, true]);
    assert.equal((await backend.rateCounts.plan.take('app_x', 1, 10)).taken, false);
    assert.ok('at' in (await backend.widgetWindows.take('visitor|app_x|v', 1)));
    await backend.widgetOwners.claim('conv_x', 'vis_x');
    assert.equal(backend.widgetSecret.length, 64, 'a secret made in the directory');
    // D-76: the control plane's document, seeded from the fixtures (D-77), and the tenants derived from it.
    assert.equal(backend.control.read().version, 1);
    assert.deepEqual(
      [...backend.tenants.apps.keys()],
      backend.control.read().apps.map((a) => a.id),
    );
    for (const file of [
      'ratelimits.jsonl',
      'widget/budget.jsonl',
      'widget/owners.jsonl',
      'widget-secret',
      'idempotency',
      'control.json',
      'control/audit.jsonl',
    ])
      assert.ok(existsSync(path.join(dir, file)), file);
    await Promise.all([backend.close(), backend.close()]);
    await backend.close();
    assert.ok(!existsSync(path.join(dir, 'LOCK')), 'the directory is free again');
    // What was written is there on the next open.
    const again = await openBackend({ ...options(dir), widgetSecret: 'a configured secret of 32 characters!' });
    try {
      assert.equal(await again.widgetOwners.ownerOf('conv_x'), 'vis_x');
      assert.equal((await again.rateCounts.plan.take('app_x', 1, 10)).taken, false, 'the count outlived the restart');
      assert.equal(again.widgetSecret.toString(), 'a configured secret of 32 characters!', 'PARLEY_WIDGET_SECRET wins');
    } finally {
      await again.close();
    }
  });

  test('D-84: the change events are made as the store opens, from its outbox and the control plane, and the store asks them at each change', async () => {
    let sources: ChangeSources | undefined;
    const changeEvents = (s: ChangeSources): ChangeEvents => {
      sources = s;
      // The endpoints' team, read from the control plane's document when the change is made.
      const teamOf = (appId: string) => s.control.read().apps.find((a) => a.id === appId)?.team_id ?? 'none';
      return { ...NO_CHANGE_EVENTS, wants: () => true, created: (r) => [{ ...outboxEvent(`evt_${r.id}`), team_id: teamOf(r.app_id) }] };
    };
    const backend = await openBackend({ ...options(await tempDir()), changeEvents });
    try {
      assert.equal(sources?.outbox, backend.store.outbox);
      assert.equal(backend.outbox, backend.store.outbox);
      await backend.store.putConversation(record('conv_e1'));
      assert.equal((await backend.outbox.event('evt_conv_e1'))?.team_id, 'team_demo');
    } finally {
      await backend.close();
    }
  });

  test('a concern that cannot open fails the start and closes what was opened before it', async () => {
    const dir = await tempDir();
    await fs.writeFile(path.join(dir, 'usage.jsonl'), 'not json\n{}\n');
    await assert.rejects(openBackend(options(dir)), (err) => err instanceof DataFileError && /usage\.jsonl/.test(err.message));
    assert.ok(!existsSync(path.join(dir, 'LOCK')), 'the store opened before it was closed: the directory is free');
  });
});
