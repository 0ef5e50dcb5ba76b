// The checksummed key format (D-70) and the webhook signing secret's derivation.
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { checkFormat, checksumOf, newSecret, redacted, webhookSecretText, webhookSigningKey } from '../src/core/api-keys.ts';

describe('checksummed keys (D-70)', () => {
  test('a new key has its prefix, 32 random base62 characters and a 6-character checksum, and checks as valid', () => {
    for (const prefix of ['sk_live_', 'pk_live_', 'pat_'] as const) {
      const key = newSecret(prefix);
      assert.match(key, new RegExp(`^${prefix}[0-9A-Za-z]{38}$`));
      assert.equal(checkFormat(key), 'valid');
      assert.equal(key.slice(-6), checksumOf(key.slice(0, -6)));
    }
    assert.notEqual(newSecret('sk_live_'), newSecret('sk_live_'));
  });

  test('one mistyped character, or two swapped, is caught without a look-up', () => {
    const key = newSecret('sk_live_');
    for (let i = 8; i < key.length; i++) {
      const c = key[i]!;
      const typo = key.slice(0, i) + (c === 'a' ? 'b' : 'a') + key.slice(i + 1);
      assert.equal(checkFormat(typo), 'mistyped', `position ${i}`);
    }
    const i = key.slice(8).search(/(.)(?!\1)./) + 8;
    const swapped = key.slice(0, i) + key[i + 1] + key[i] + key.slice(i + 2);
    assert.equal(checkFormat(swapped), 'mistyped');
  });

  test('keys of other shapes are left to the look-up (the demo keys, other implementations)', () => {
    assert.equal(checkFormat('sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3'), 'other');
    assert.equal(checkFormat(`sk_live_${'a'.repeat(37)}`), 'other');
    assert.equal(checkFormat('sk_test_abc'), 'other');
  });

  test('the checksum is the CRC32 of what precedes it in base62, padded to 6', () => {
    // CRC32 (IEEE, reflected, polynomial 0xEDB88320) written out here, independently of node:zlib.
    const crc = (s: string) => {
      let c = ~0;
      for (const b of Buffer.from(s)) {
        c ^= b;
        for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0xedb88320 : c >>> 1;
      }
      return ~c >>> 0;
    };
    const base62 = (n: number) => {
      const digits = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
      let out = '';
      for (let i = 0; i < 6; i++, n = Math.floor(n / 62)) out = digits[n % 62] + out;
      return out;
    };
    for (const s of ['', 'sk_live_', 'pk_live_0123456789abcdefghijABCDEFGHIJ01', 'pat_x']) assert.equal(checksumOf(s), base62(crc(s)));
  });

  test('listed keys show their prefix and last four characters only', () => {
    assert.equal(redacted('sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3'), 'sk_live_…C9P3');
    assert.equal(redacted('pat_0123456789012345678901234567890123456789'), 'pat_…6789');
  });
});

describe('the webhook signing secret of a secret key', () => {
  test('S = HMAC-SHA256(key = the whole key, message = "parley webhook signing v1"); whsec_ + base64 of S, 44 characters', () => {
    const key = 'sk_live_demo_zjjkzrfBZ8nyuJGIZkh4CBUFM65HC9P3';
    const s = webhookSigningKey(key);
    assert.equal(s.length, 32);
    assert.deepEqual(s, createHmac('sha256', key).update('parley webhook signing v1').digest());
    const text = webhookSecretText(s);
    assert.match(text, /^whsec_[A-Za-z0-9+/]{43}=$/);
    assert.deepEqual(Buffer.from(text.slice(6), 'base64'), s);
  });
});
