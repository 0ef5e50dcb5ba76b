// The control plane's storage (D-76, D-77): one suite (test/support/control-suite.ts) against the data
// directory's files, then what the file backend keeps on its own: its atomic document and audit step.
// test/proof/pg-control-store.test.ts runs the suite on PostgreSQL (D-78).
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { describe, test } from 'node:test';
import type { ControlDocT } from '../src/core/control.ts';
import { FileControlPlane } from '../src/store/file/control.ts';
import { verifyPassword } from '../src/services/admin/passwords.ts';
import { loadFixtures } from '../src/store/fixtures.ts';
import { controlSuite, draft } from './support/control-suite.ts';
import { FIXTURES_DIR, tempDir } from './support/helpers.ts';

controlSuite('data directory', {
  async fresh() {
    const dir = await tempDir();
    return { open: (fixtures, log, now) => FileControlPlane.open(dir, { fixtures, log, now }) };
  },
});

const renameDemo = (name: string) => (d: ControlDocT) => {
  d.apps.find((a) => a.id === 'app_demo')!.name = name;
  return [draft('team_demo', 'app.updated')];
};

test("D-77: the demo admin's password written in the README verifies against the fixtures' hash", async () => {
  const readme = await fs.readFile(path.join(FIXTURES_DIR, '..', 'README.md'), 'utf8');
  const m = /`admin@demo\.example` with the password `([^`]+)`/.exec(readme);
  assert.ok(m, 'the README names the demo admin and its password');
  const admin = (await loadFixtures(FIXTURES_DIR)).members.find((x) => x.email === 'admin@demo.example')!;
  assert.equal(await verifyPassword(m[1]!, admin.password_hash!), true);
});

describe('control plane in the data directory (D-76)', () => {
  test('control.json is written whole through lowdb (no temporary file left); a stale temporary file is not read', async () => {
    const dir = await tempDir();
    const fixtures = await loadFixtures(FIXTURES_DIR);
    const c = await FileControlPlane.open(dir, { fixtures });
    await c.apply(renameDemo('Written'));
    await c.close();
    const names = await fs.readdir(dir);
    assert.ok(names.includes('control.json'));
    assert.ok(!names.some((n) => n.endsWith('.tmp')), names.join(' '));
    const onDisk = JSON.parse(await fs.readFile(path.join(dir, 'control.json'), 'utf8')) as ControlDocT;
    assert.equal(onDisk.version, 2);
    // A crash between the temporary file's write and its rename leaves it: the document is the last renamed one.
    await fs.writeFile(path.join(dir, 'control.json.tmp'), '{"version": 99, "torn');
    const again = await FileControlPlane.open(dir, { fixtures });
    assert.equal(again.read().version, 2);
    await again.close();
  });

  test('audit entries of a version the document never reached (a crash between the two writes) are voided, and stay voided', async () => {
    const dir = await tempDir();
    const fixtures = await loadFixtures(FIXTURES_DIR);
    const c = await FileControlPlane.open(dir, { fixtures });
    await c.apply(renameDemo('Kept'));
    await c.close();
    // What a crash after the audit's fsync and before the document's rename leaves: an entry of version 3.
    const orphan = { v: 3, a: { ...draft('team_demo', 'app.updated'), id: 'aud_orphan', created_at: Math.floor(Date.now() / 1000) } };
    await fs.appendFile(path.join(dir, 'control', 'audit.jsonl'), `${JSON.stringify(orphan)}\n`);
    const again = await FileControlPlane.open(dir, { fixtures });
    try {
      const ids = async () => (await again.audit.list({ team_id: 'team_demo', limit: 10 })).data.map((a) => a.id);
      assert.ok(!(await ids()).includes('aud_orphan'));
      // The next change is version 3 too: its entries count, the orphan's still do not.
      assert.equal((await again.apply(renameDemo('Next'))).version, 3);
      assert.equal((await ids()).length, 2);
      assert.ok(!(await ids()).includes('aud_orphan'));
    } finally {
      await again.close();
    }
    const third = await FileControlPlane.open(dir, { fixtures });
    assert.ok(!(await third.audit.list({ team_id: 'team_demo', limit: 10 })).data.some((a) => a.id === 'aud_orphan'));
    assert.equal((await third.audit.list({ team_id: 'team_demo', limit: 10 })).data.length, 2);
    await third.close();
  });

  test('a control.json that is not a valid document refuses the start, naming the file and the fault', async () => {
    const dir = await tempDir();
    const fixtures = await loadFixtures(FIXTURES_DIR);
    await fs.writeFile(path.join(dir, 'control.json'), '{"version": 1, "teams": [], "keys": [], "plans": [], "apps": [{"id": 1}]}');
    await assert.rejects(FileControlPlane.open(dir, { fixtures }), /control\.json: apps\.0\./);
    await fs.writeFile(path.join(dir, 'control.json'), 'not json');
    await assert.rejects(FileControlPlane.open(dir, { fixtures }), /control\.json: is not valid JSON/);
  });
});
