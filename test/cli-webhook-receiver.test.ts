// `parley webhooks check-receiver` (docs/webhooks.md, "Checking your receiver", D-175), in-process
// against receivers on loopback: a good one built on the `standardwebhooks` package passes every case,
// and each receiver broken one way fails exactly the cases of its fault.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { RECEIVER_CASES } from '../conformance/receiver-cases.ts';
import type { RunResults } from '../conformance/results.ts';
import { webhookSecretText, webhookSigningKey } from '../src/core/api-keys.ts';
import { signingKeyOf, verifySignature } from '../src/core/webhook-signature.ts';
import { runCli } from './support/cli-helpers.ts';
import { KEY, tempDir } from './support/helpers.ts';
import { type Receiver, startReceiver } from './support/webhook-receiver.ts';

const SECRET = webhookSecretText(webhookSigningKey(KEY));
const ALL = RECEIVER_CASES.map((c) => c.id);

type Headers = Record<string, string>;
/** A receiver's rule: the status it answers a delivery. */
type Rule = (headers: Headers, body: string) => number;

/** A receiver on loopback that answers each delivery by `rule`. */
function serve(rule: Rule): Promise<Receiver> {
  return startReceiver((r) => ({ status: rule(r.headers, r.body), body: 'answered' }));
}

const wh = new Webhook(SECRET);
/** The Standard Webhooks library's verdict: 204, or 400 when it throws. */
function library(headers: Headers, body: string): number {
  try {
    wh.verify(body, headers);
    return 204;
  } catch {
    return 400;
  }
}

const MISSING = ['webhook-id', 'webhook-timestamp', 'webhook-signature'];

/** The good receiver and the broken ones, each with the cases it must fail. */
const RECEIVERS: Record<string, { rule: () => Rule; fails: string[] }> = {
  // Handles a webhook-id once and answers 200 to it again (D-175: de-duplication is invisible).
  good: {
    rule: () => {
      const seen = new Set<string>();
      return (h, b) => {
        const status = library(h, b);
        if (status === 204 && seen.has(h['webhook-id']!)) return 200;
        if (status === 204) seen.add(h['webhook-id']!);
        return status;
      };
    },
    fails: [],
  },
  // Checks that a `v1,` signature of the right length is there, never what it signs.
  'accepts a wrong signature': {
    rule: () => (h, b) =>
      MISSING.some((k) => !h[k]) || Math.abs(Date.now() / 1000 - Number(h['webhook-timestamp'])) > 300
        ? 400
        : h['webhook-signature']!.split(' ').some((s) => /^v1,[A-Za-z0-9+/]{43}=$/.test(s)) && b !== ''
          ? 200
          : 400,
    fails: ['R-wrong-signature', 'R-body-changed'],
  },
  'ignores the timestamp': {
    rule: () => (h, b) => (verifySignature(signingKeyOf(SECRET), h, b, 0, null).ok ? 200 : 401),
    fails: ['R-timestamp-old', 'R-timestamp-ahead'],
  },
  // Verifies the JSON it parsed, serialized again, instead of the raw body.
  'verifies the body leniently': {
    rule: () => (h, b) => library(h, JSON.stringify(JSON.parse(b))),
    fails: ['R-body-changed'],
  },
  'answers 500 on a duplicate id': {
    rule: () => {
      const seen = new Set<string>();
      return (h, b) => {
        const status = library(h, b);
        if (status === 204 && seen.has(h['webhook-id']!)) return 500;
        seen.add(h['webhook-id']!);
        return status;
      };
    },
    fails: ['R-duplicate-id'],
  },
  'ignores missing headers': {
    rule: () => (h, b) => (MISSING.some((k) => !h[k]) ? 200 : library(h, b)),
    fails: ['R-no-webhook-id', 'R-no-webhook-timestamp', 'R-no-webhook-signature'],
  },
  'accepts only the first signature': {
    rule: () => (h, b) => library({ ...h, 'webhook-signature': h['webhook-signature']?.split(' ')[0] ?? '' }, b),
    fails: ['R-key-roll'],
  },
};

/** A config directory of its own: no profile of the machine's lends a key. */
let configHome: string;

async function check(url: string, ...extra: string[]) {
  return runCli(['webhooks', 'check-receiver', '--url', url, '--secret', SECRET, ...extra], { env: { XDG_CONFIG_HOME: configHome } });
}

function failedIds(run: RunResults): string[] {
  return run.results.filter((r) => r.status !== 'passed').map((r) => r.id);
}

describe('parley webhooks check-receiver (D-175)', () => {
  let dir: string;
  before(async () => {
    dir = await tempDir('parley-check-receiver-');
    configHome = dir;
  });
  after(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  for (const [name, { rule, fails }] of Object.entries(RECEIVERS)) {
    test(`D-175: a receiver that ${name === 'good' ? 'uses standardwebhooks' : name} ${fails.length ? `fails ${fails.join(', ')}` : 'passes every case'}`, async () => {
      const rx = await serve(rule());
      try {
        const r = await check(rx.url, '--json');
        const run = JSON.parse(r.stdout.slice(0, r.stdout.lastIndexOf('\ncheck-receiver:'))) as RunResults;
        assert.deepEqual(failedIds(run), fails, r.stdout);
        assert.equal(r.code, fails.length ? 1 : 0);
        assert.deepEqual(
          run.results.map((x) => x.id),
          ALL,
        );
        assert.equal(rx.received.length, RECEIVER_CASES.length + 1, 'one request a case, two for the duplicate');
        assert.match(r.stdout, new RegExp(`\\ncheck-receiver: ${ALL.length - fails.length} passed, ${fails.length} failed`));
        for (const id of fails) {
          const f = run.results.find((x) => x.id === id)!;
          assert.ok(f.failure?.exchanges?.length, `${id} carries its exchanges`);
          assert.ok(
            f.clauses?.some((c) => /Standard Webhooks|D-8\d/.test(c)),
            `${id} names its clause`,
          );
          assert.match(f.failure!.curl!, /^curl -sS -X POST 'http:\/\/127\.0\.0\.1:\d+\/hook'/);
        }
      } finally {
        await rx.close();
      }
    });
  }

  test('D-175: a delivery to accept is an event of D-83 that standardwebhooks verifies; the secret never shows', async () => {
    const rx = await serve(RECEIVERS.good!.rule());
    try {
      const r = await check(rx.url, '--app', 'app_demo', '--reporter', 'json');
      assert.equal(r.code, 0, r.stdout);
      const run = JSON.parse(r.stdout.slice(0, r.stdout.lastIndexOf('\ncheck-receiver:'))) as RunResults & { matrix?: unknown };
      assert.equal(run.subject, 'receiver');
      assert.equal(run.matrix, undefined, 'a receiver has no clause matrix');
      const first = rx.received[0]!;
      const event = wh.verify(first.body, first.headers) as {
        id: string;
        object: string;
        type: string;
        app_id: string;
        data: { object: string };
      };
      assert.equal(event.id, first.headers['webhook-id']);
      assert.deepEqual(
        [event.object, event.type, event.app_id, event.data.object],
        ['event', 'conversation.created', 'app_demo', 'conversation'],
      );
      assert.equal(first.headers['content-type'], 'application/json');
      assert.doesNotMatch(r.stdout + r.stderr, new RegExp(SECRET.slice(6, 20).replace(/[+/]/g, '\\$&')));
    } finally {
      await rx.close();
    }
  });

  test('D-175: a 5xx is no refusal and no answer fails: the pretty report names the answer, its curl and the clause', async () => {
    const rx = await serve(() => 503);
    try {
      const r = await check(rx.url);
      assert.equal(r.code, 1);
      assert.match(r.stdout, /✗ R-signed {2}a delivery signed as Parley signs it is accepted {2}→ HTTP 503/);
      assert.match(r.stdout, /answered 503: a 5xx is a failure of the receiver, never a refusal/);
      assert.match(r.stdout, /clauses: Standard Webhooks 1\.0: Signature scheme, D-80, D-83/);
      assert.match(r.stdout, /check-receiver: 0 passed, 10 failed/);
    } finally {
      await rx.close();
    }
    // Its port, closed: nothing answers.
    const r = await check(rx.url, '--timeout', '5');
    assert.equal(r.code, 1);
    assert.match(r.stdout, /no answer: .*ECONNREFUSED/);
  });

  /** A loopback server whose handler may leave a request unanswered; its open connections are cut at close. */
  async function rawServer(handler: http.RequestListener, run: (url: string) => Promise<void>): Promise<void> {
    const server = http.createServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      await run(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  test('D-175: a receiver that never answers fails each case at --timeout, each request sent once', async () => {
    let requests = 0;
    await rawServer(
      () => {
        requests++;
      },
      async (url) => {
        const r = await check(url, '--timeout', '0.2', '--reporter', 'tap');
        assert.equal(r.code, 1);
        assert.equal((r.stdout.match(/^not ok /gm) ?? []).length, ALL.length);
        assert.match(r.stdout, /message: \|-\n\s+no answer: timed out after 200 ms/);
        // The duplicate's second request is not sent once its first went unanswered; nothing is retried.
        assert.equal(requests, ALL.length);
      },
    );
  });

  test('D-175: an answer whose body never ends is judged by its status once 16 KiB of it came', { timeout: 60_000 }, async () => {
    await rawServer(
      (req, res) => {
        req.resume();
        res.writeHead(400, { 'content-type': 'text/plain' });
        res.write('x'.repeat(64 * 1024));
      },
      async (url) => {
        const r = await check(url, '--json');
        const run = JSON.parse(r.stdout.slice(0, r.stdout.lastIndexOf('\ncheck-receiver:'))) as RunResults;
        assert.deepEqual(failedIds(run), ['R-signed', 'R-key-roll', 'R-duplicate-id']);
        const shown = run.results[0]!.failure!.exchanges![0]!.response.body as string;
        assert.equal(shown.length, 16 * 1024);
      },
    );
  });

  test('D-175: --reporter junit|tap|html with --out writes the report; the duplicate case replays its two requests', async () => {
    const rx = await serve(RECEIVERS['answers 500 on a duplicate id']!.rule());
    try {
      const files = { junit: 'r.xml', tap: 'r.tap', html: 'r.html' } as const;
      for (const [reporter, file] of Object.entries(files)) {
        const r = await check(rx.url, '--reporter', reporter, '--out', path.join(dir, file));
        assert.equal(r.code, 1);
        assert.match(r.stdout, /✗ R-duplicate-id .*→ HTTP 204, HTTP 500/);
      }
      const junit = await fs.readFile(path.join(dir, files.junit), 'utf8');
      assert.match(junit, /<testsuites name="check-receiver" tests="10" failures="1"/);
      assert.match(
        junit,
        /<testcase classname="check-receiver" name="R-duplicate-id: [^"]*"[^>]*>\s*<failure message="request 2 of the case answered 500/,
      );
      assert.match(junit, /reproduce:\n#!\/bin\/sh/);
      assert.match(junit, /clauses: Standard Webhooks 1\.0: Verifying signatures \(webhook-id as an idempotency key\), D-85/);
      const tap = await fs.readFile(path.join(dir, files.tap), 'utf8');
      assert.match(tap, /^not ok 3 - R-duplicate-id/m);
      assert.doesNotMatch(tap, /# score/);
      assert.match(tap, /clauses: \|-\n\s+Standard Webhooks 1\.0: Verifying signatures \(webhook-id as an idempotency key\), D-85/);
      const html = await fs.readFile(path.join(dir, files.html), 'utf8');
      assert.match(html, /<h1>Webhook receiver report<\/h1>/);
      assert.doesNotMatch(html, /Clause matrix/);
    } finally {
      await rx.close();
    }
  });

  test('D-175: bad usage exits 2 and sends nothing', async () => {
    const rx = await serve(() => 204);
    try {
      for (const args of [
        ['--url', 'ftp://127.0.0.1/x', '--secret', SECRET],
        ['--url', rx.url, '--secret', 'whsec_short'],
        ['--url', rx.url, '--secret', SECRET, '--reporter', 'xml'],
        ['--url', rx.url, '--secret', SECRET, '--reporter', 'tap', '--json'],
        ['--url', rx.url],
      ]) {
        const r = await runCli(['webhooks', 'check-receiver', ...args], { env: { XDG_CONFIG_HOME: configHome } });
        assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      }
      assert.equal(rx.received.length, 0);
    } finally {
      await rx.close();
    }
  });
});
