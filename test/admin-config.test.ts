// The control plane's settings: PUBLIC_URL (D-65) validated at start with a clear error, shown by the
// banner, making cookies Secure when https and the base of the links Parley gives; the password-hash
// cost (D-66), below the production cost only with NODE_ENV=test, by flag, environment or code.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { startParley } from '../src/app.ts';
import { ConfigError, loadConfig } from '../src/config.ts';
import { banner } from '../src/main.ts';
import { PRODUCTION_COST } from '../src/services/admin/passwords.ts';
import { adminClient, bearer, DEMO_ADMIN, TEST_HASH_COST } from './support/admin-client.ts';
import { FIXTURES_DIR, startTestServer, tempDir } from './support/helpers.ts';

const refusal = (argv: string[], env: Record<string, string> = {}) => {
  try {
    loadConfig(argv, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.message;
  }
  assert.fail(`accepted: ${argv.join(' ')} ${JSON.stringify(env)}`);
};

describe('PUBLIC_URL (D-65)', () => {
  test('an absolute http(s) URL, kept without its trailing slash; the flag wins over the environment; none by default', () => {
    assert.equal(loadConfig([], {}).publicUrl, null);
    assert.equal(loadConfig([], { PUBLIC_URL: 'https://parley.example.com/' }).publicUrl, 'https://parley.example.com');
    assert.equal(
      loadConfig(['--public-url', 'http://10.0.0.5:8080/parley/'], { PUBLIC_URL: 'https://x.example' }).publicUrl,
      'http://10.0.0.5:8080/parley',
    );
  });

  test('anything else stops the start with an error naming PUBLIC_URL and what it must be', () => {
    for (const [given, why] of [
      ['parley.example.com', /must be an absolute URL/],
      ['ftp://parley.example.com', /http:\/\/ or https:\/\//],
      ['https://user:pw@parley.example.com', /without a user name or password/],
      ['https://parley.example.com/?next=1', /without a query or fragment/],
      ['https://parley.example.com/#top', /without a query or fragment/],
    ] as const) {
      const message = refusal([], { PUBLIC_URL: given });
      assert.match(message, /^PUBLIC_URL must be /);
      assert.match(message, why);
    }
  });

  test('the banner shows it', () => {
    const text = banner({
      baseUrl: 'http://127.0.0.1:8787/v1',
      fixturesDir: FIXTURES_DIR,
      playgroundUrl: null,
      dataDir: './data',
      databaseUrl: null,
      publicUrl: 'https://parley.example.com',
    });
    assert.match(text, /\n {2}public URL: +https:\/\/parley\.example\.com /);
    assert.doesNotMatch(
      banner({ baseUrl: 'http://127.0.0.1:8787/v1', fixturesDir: FIXTURES_DIR, playgroundUrl: null, dataDir: './data', databaseUrl: null }),
      /public URL/,
    );
  });

  test('https: the session cookie is Secure (TLS ends at the proxy) and links start with it; without it, neither', async () => {
    const behind = await startTestServer({ passwordHashCost: TEST_HASH_COST, publicUrl: 'https://parley.example.com/base' });
    const plain = await startTestServer({ passwordHashCost: TEST_HASH_COST });
    try {
      const client = adminClient(new URL(behind.baseUrl).origin);
      const s = await client.call('POST', '/sessions', DEMO_ADMIN);
      assert.match(s.headers.get('set-cookie')!, /; Secure$/);
      const admin = bearer(await client.token(DEMO_ADMIN.email, DEMO_ADMIN.password));
      const invited = await client.call('POST', '/members', { email: 'linked@demo.example', role: 'viewer' }, admin);
      assert.equal(invited.body.invite.accept_url, `https://parley.example.com/base/dashboard#/invite/${invited.body.invite.token}`);
      const own = await adminClient(new URL(plain.baseUrl).origin).call('POST', '/sessions', DEMO_ADMIN);
      assert.doesNotMatch(own.headers.get('set-cookie')!, /Secure/);
    } finally {
      await Promise.all([behind.close(), plain.close()]);
    }
  });
});

describe('the password-hash cost (D-66)', () => {
  test(`${PRODUCTION_COST} by default; by flag or environment from ${PRODUCTION_COST} to 18; lower only with NODE_ENV=test`, () => {
    assert.equal(loadConfig([], {}).passwordHashCost, PRODUCTION_COST);
    assert.equal(loadConfig(['--password-hash-cost', '17'], {}).passwordHashCost, 17);
    assert.equal(loadConfig([], { PASSWORD_HASH_COST: '16' }).passwordHashCost, 16);
    assert.equal(loadConfig([], { PASSWORD_HASH_COST: '10', NODE_ENV: 'test' }).passwordHashCost, 10);
    assert.match(refusal([], { PASSWORD_HASH_COST: '10' }), /below 15 \(the production cost\) is for tests only: set NODE_ENV=test/);
    assert.match(refusal(['--password-hash-cost', '12'], { NODE_ENV: 'production' }), /for tests only/);
    assert.match(refusal([], { PASSWORD_HASH_COST: '19', NODE_ENV: 'test' }), /integer from 4 to 18/);
    assert.match(refusal([], { PASSWORD_HASH_COST: 'high' }), /integer from 4 to 18 \(got "high"\)/);
  });

  test('startParley keeps the same rule: a lowered cost outside tests starts nothing', async () => {
    const was = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      await assert.rejects(
        startParley({
          host: '127.0.0.1',
          port: 0,
          dataDir: await tempDir(),
          fixturesDir: FIXTURES_DIR,
          passwordHashCost: 10,
          logLevel: 'silent',
        }),
        /is for tests only/,
      );
    } finally {
      process.env.NODE_ENV = was;
    }
  });
});
