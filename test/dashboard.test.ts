// The dashboard as served (docs/dashboard.md, D-95…D-99), without a browser: its files, their CSP and
// headers, the bundle's size and content, and --no-dashboard. Its pages are driven in Chromium by
// test/proof/dashboard-browser.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { DASHBOARD_CSP, DASHBOARD_DIR, bundleDashboard } from '../src/api/dashboard-assets.ts';
import { loadConfig } from '../src/config.ts';
import { banner } from '../src/main.ts';
import { runCli } from './support/cli-helpers.ts';
import { FIXTURES_DIR, startTestServer, tempDir, type TestServer } from './support/helpers.ts';

/** D-95: the stated bound on the minified bundle (the widget's test holds its own). */
const DASHBOARD_MAX_BYTES = 150 * 1024;

const originOf = (s: TestServer) => new URL(s.baseUrl).origin;

describe('the dashboard at /dashboard (D-95, D-96)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server?.close());

  test('the page, its script and its stylesheet are served under a strict CSP that no frame may hold', async () => {
    const origin = originOf(server);
    assert.equal(server.dashboardUrl, `${origin}/dashboard`);
    const page = await fetch(`${origin}/dashboard`);
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
    const html = await page.text();
    assert.match(html, /<script src="\/dashboard\/app\.js" defer><\/script>/);
    assert.match(html, /<link rel="stylesheet" href="\/dashboard\/app\.css">/);
    // No inline script or style anywhere in the page: the CSP would refuse them, and nothing needs them.
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/);
    assert.doesNotMatch(html, /<style|\sstyle=/);
    for (const p of ['/dashboard', '/dashboard/', '/dashboard/app.js', '/dashboard/app.css']) {
      const res = await fetch(`${origin}${p}`);
      assert.equal(res.status, 200, p);
      const csp = res.headers.get('content-security-policy') ?? '';
      assert.equal(csp, DASHBOARD_CSP, p);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.match(csp, /script-src 'self';/);
      assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:/);
      assert.equal(res.headers.get('x-frame-options'), 'DENY', p);
      assert.equal(res.headers.get('x-content-type-options'), 'nosniff', p);
      assert.equal(res.headers.get('referrer-policy'), 'no-referrer', p);
      await res.arrayBuffer();
    }
    assert.match((await fetch(`${origin}/dashboard/app.js`)).headers.get('content-type') ?? '', /^text\/javascript/);
    assert.match((await fetch(`${origin}/dashboard/app.css`)).headers.get('content-type') ?? '', /^text\/css/);
  });

  test('the admin surface it uses answers on the same origin (sign-in sets the SameSite=Strict cookie)', async () => {
    const res = await fetch(`${originOf(server)}/admin/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'admin@demo.example', password: 'parley-demo-admin' }),
    });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('set-cookie') ?? '', /parley_session=.*HttpOnly; SameSite=Strict/);
  });
});

describe('the bundle (D-95, D-98)', () => {
  let js = '';
  before(async () => {
    js = await bundleDashboard();
  });

  test(`is one minified script of at most ${DASHBOARD_MAX_BYTES / 1024} KB`, () => {
    const bytes = Buffer.byteLength(js);
    assert.ok(bytes > 5_000, `a bundle of ${bytes} bytes is not the dashboard`);
    assert.ok(bytes <= DASHBOARD_MAX_BYTES, `the dashboard's bundle is ${bytes} bytes, over ${DASHBOARD_MAX_BYTES}`);
    assert.ok(!js.includes('\n  '), 'minified');
    // dashboard/types.ts takes the contract's types, as types only: none of zod's code comes with them.
    assert.doesNotMatch(js, /ZodError|\$ZodType|invalid_type/, 'no zod in the bundle');
  });

  test('holds no credential, fetches nothing but /admin/v1, and never parses data as markup', () => {
    for (const secret of ['parley-demo-admin', 'sk_live_demo', 'pk_live_demo', 'admin@demo.example'])
      assert.ok(!js.includes(secret), secret);
    // The only absolute URLs: the SVG namespace, and examples in help text (RFC 2606's .example).
    const urls = (js.match(/https?:\/\/[^\s"'`)]+/g) ?? []).filter(
      (u) => !/^http:\/\/www\.w3\.org\/2000\/svg$|^https?:\/\/[a-z.]+\.example\b/.test(u),
    );
    assert.deepEqual(urls, [], 'no other origin (a CDN, an API elsewhere)');
    assert.doesNotMatch(js, /localStorage|sessionStorage|indexedDB|document\.cookie/, 'no credential in web storage (D-98)');
    assert.doesNotMatch(js, /innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function/, 'D-97: text is never markup');
    assert.match(js, /\/admin\/v1/);
  });

  test('every source file is TypeScript under the dashboard tsconfig, with the page and its stylesheet', () => {
    const files = fs.readdirSync(DASHBOARD_DIR).sort();
    assert.ok(
      files.includes('tsconfig.json') && files.includes('index.html') && files.includes('dashboard.css') && files.includes('main.ts'),
    );
    const css = fs.readFileSync(path.join(DASHBOARD_DIR, 'dashboard.css'), 'utf8');
    assert.match(css, /prefers-color-scheme: dark/);
    assert.match(css, /:focus-visible/);
    assert.doesNotMatch(css, /@import|url\(/, 'no outside resource');
  });
});

describe('--no-dashboard (D-95)', () => {
  test('serves no dashboard, and the admin surface stays; an invitation names the route, and the CLI prints the token beside it (D-72)', async () => {
    const bare = await startTestServer({ dashboard: false });
    try {
      assert.equal(bare.dashboardUrl, null);
      for (const p of ['/dashboard', '/dashboard/app.js', '/dashboard/app.css']) {
        const res = await fetch(`${originOf(bare)}${p}`);
        assert.equal(res.status, 404, p);
        await res.arrayBuffer();
      }
      const signIn = await fetch(`${originOf(bare)}/admin/v1/sessions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'admin@demo.example', password: 'parley-demo-admin' }),
      });
      assert.equal(signIn.status, 200);
      // D-72: without the dashboard, an invitation names the route its token is sent to.
      const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
      const { csrf_token } = (await signIn.json()) as { csrf_token: string };
      const added = await fetch(`${originOf(bare)}/admin/v1/members`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': csrf_token },
        body: JSON.stringify({ email: 'no-dashboard@demo.example', role: 'viewer' }),
      });
      assert.equal(
        ((await added.json()) as { invite: { accept_url: string } }).invite.accept_url,
        `${originOf(bare)}/admin/v1/invites/accept`,
      );
      // `parley members add` prints that route and, beside it, the token to send there (no link carries it).
      const env = { PARLEY_BASE_URL: bare.baseUrl, XDG_CONFIG_HOME: await tempDir('parley-cli-no-dashboard-') };
      const login = await runCli(['admin', 'login', '--email', 'admin@demo.example', '--password-stdin'], {
        env,
        input: 'parley-demo-admin\n',
      });
      assert.equal(login.code, 0, login.stderr);
      const cli = await runCli(['members', 'add', '--email', 'cli-no-dashboard@demo.example', '--role', 'viewer'], { env });
      assert.equal(cli.code, 0, cli.stderr);
      const printed = /^(\S+)\ntoken: ([A-Za-z0-9_-]{43})\n$/.exec(cli.stdout);
      assert.ok(printed, cli.stdout);
      assert.equal(printed[1], `${originOf(bare)}/admin/v1/invites/accept`);
      // The token printed is the new member's: sent to that route, it sets their password.
      const accepted = await fetch(printed[1]!, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: printed[2], password: 'a long enough password' }),
      });
      assert.equal(accepted.status, 200);
      assert.equal(((await accepted.json()) as { email: string }).email, 'cli-no-dashboard@demo.example');
    } finally {
      await bare.close();
    }
  });

  test('the flag is parsed, and the banner names the dashboard only when it is on', () => {
    assert.equal(loadConfig(['--no-dashboard'], {}).dashboard, false);
    assert.equal(loadConfig([], {}).dashboard, true);
    const of = {
      baseUrl: 'http://127.0.0.1:8787/v1',
      fixturesDir: FIXTURES_DIR,
      playgroundUrl: null,
      dataDir: './data',
      databaseUrl: null,
    };
    assert.match(banner({ ...of, dashboardUrl: 'http://127.0.0.1:8787/dashboard' }), /dashboard: +http:\/\/127\.0\.0\.1:8787\/dashboard/);
    assert.doesNotMatch(banner({ ...of, dashboardUrl: null }), /^ +dashboard:/m);
  });
});
