// Members' passwords (D-66): scrypt hashes that verify, refuse other passwords, carry their cost.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hashPassword, verifyNobody, verifyPassword } from '../src/services/admin/passwords.ts';

describe('password hashes (D-66)', () => {
  test('a hash verifies its password only, is salted, and records its parameters', async () => {
    const a = await hashPassword('correct horse battery staple', 10);
    const b = await hashPassword('correct horse battery staple', 10);
    assert.notEqual(a, b, 'salted');
    assert.match(a, /^scrypt\$10\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    assert.doesNotMatch(a, /correct horse/);
    assert.equal(await verifyPassword('correct horse battery staple', a), true);
    assert.equal(await verifyPassword('correct horse battery stapler', a), false);
    assert.equal(await verifyPassword('', a), false);
  });

  test('a hash made at another cost still verifies (a later cost applies to new hashes only)', async () => {
    const old = await hashPassword('s3cret-pass', 11);
    assert.equal(await verifyPassword('s3cret-pass', old), true);
  });

  test('the same password in another Unicode normal form verifies (NFC)', async () => {
    const h = await hashPassword('caf\u00e9-password', 10);
    assert.equal(await verifyPassword('cafe\u0301-password', h), true);
  });

  test('a malformed record matches nothing; an unknown account answers false after the same work', async () => {
    assert.equal(await verifyPassword('x', 'plain-text'), false);
    assert.equal(await verifyPassword('x', 'scrypt$10$8$1$$'), false);
    assert.equal(await verifyNobody('whatever', 10), false);
  });
});
