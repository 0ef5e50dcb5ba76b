// Export format version 2 (docs/data.md, D-79): `parley data export|import` carry the control plane, the
// document with its hashes and the audit log, so that a restore keeps every key, token, revocation and
// password as it was; a target whose control plane was changed is refused, whole. On the file store
// here; test/proof/pg-data-control.test.ts runs the same cases on PostgreSQL.
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { ADMIN, fromLines, makeSource, refusesChanged, restores, type Source, withPort } from './support/data-control.ts';
import { tempDir } from './support/helpers.ts';

let source: Source;
before(async () => {
  source = await makeSource();
});

describe('export format version 2: the control plane travels (D-79)', () => {
  test('the header says version 2; a control line right after it; the audit log oldest first; counted in the end line', () => {
    const { lines, made } = source;
    const parsed = lines.map((l) => JSON.parse(l));
    assert.equal(parsed[0].version, 2);
    assert.equal(parsed[1].type, 'control');
    const doc = parsed[1].document;
    assert.ok(
      doc.members.some((m: { email: string; password_hash: string }) => m.email === ADMIN.email && m.password_hash.startsWith('scrypt$')),
    );
    assert.ok(doc.keys.some((k: { id: string; revoked_at: number | null }) => k.id === made.revokedKeyId && k.revoked_at !== null));
    // A key is carried as its hash, never in clear.
    assert.equal(
      lines.some((l) => l.includes(made.key) || l.includes(made.token)),
      false,
    );
    const audit = parsed.filter((l) => l.type === 'audit').map((l) => l.entry.action);
    assert.deepEqual(
      audit.filter((a: string) => a.startsWith('key.')),
      ['key.created', 'key.created', 'key.revoked'],
    );
    const end = parsed.at(-1);
    assert.deepEqual([end.type, end.control, end.audit], ['end', 1, audit.length]);
  });

  test("restored on a new data directory: keys, the revocation, the member's password and the audit log are as they were", async () => {
    await restores(source, { dataDir: await tempDir() });
  });

  test('a data directory whose control plane was changed is refused, and nothing is imported', async () => {
    await refusesChanged(source, { dataDir: await tempDir() });
  });
  test('a bad control line or audit line is refused with its line', async () => {
    const where = { dataDir: await tempDir() };
    const { lines } = source;
    const badDoc = lines.map((l, i) => (i === 1 ? l.replace('"teams":[', '"teams":[{"id":7},') : l));
    await assert.rejects(
      withPort(where, (p) => p.import(fromLines(badDoc))),
      /line 2: document\.teams\.0/,
    );
    const late = [lines[0]!, ...lines.slice(2, -1), lines[1]!, lines.at(-1)!];
    await assert.rejects(
      withPort(where, (p) => p.import(fromLines(late))),
      /a control line comes once, right after the header/,
    );
    const twice = lines.findIndex((l) => l.includes('"type":"audit"'));
    const dup = [...lines.slice(0, -1), lines[twice]!, lines.at(-1)!];
    await assert.rejects(
      withPort(where, (p) => p.import(fromLines(dup))),
      /appears twice in the file/,
    );
  });
});
