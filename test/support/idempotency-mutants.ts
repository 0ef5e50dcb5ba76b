// The broken Idempotency-Key implementations that prove the S4.x-idempotency-key cases and D-30's keyed
// retry of a cut stream: each changes what the reference server is asked, so that it runs what a broken
// one would (a key dropped, renamed or cleaned up). mutants.ts lists them.
import type { MutantHooks, ProxyRequest } from './mutant-proxy.ts';
import type { Mutant } from './mutants.ts';

const KEY = 'idempotency-key';
const fingerprint = (r: ProxyRequest) => `${r.method} ${r.path} ${JSON.stringify(r.json ?? r.body)}`;

/** Calls `change` on each keyed request with what the key was sent with before (undefined the first time). */
function onKeyed(change: (r: ProxyRequest, before: string[]) => void): () => MutantHooks {
  return () => {
    const seen = new Map<string, string[]>();
    return {
      request(r) {
        const key = r.headers[KEY];
        if (key === undefined) return;
        const before = seen.get(key) ?? [];
        seen.set(key, [...before, fingerprint(r)]);
        change(r, before);
      },
    };
  };
}

export const IDEMPOTENCY_MUTANTS: Mutant[] = [
  {
    id: 'idempotency-key-ignored',
    breaks: 'Idempotency-Key is ignored: a retry runs again, unmarked',
    section: 'D-30',
    profile: 'reference',
    caughtBy: 'S4.1-idempotency-key',
    because: /create conversation sent again with its Idempotency-Key: the Idempotent-Replayed header: expected "true", got null/,
    hooks: onKeyed((r) => delete r.headers[KEY]),
  },
  {
    id: 'idempotency-replay-runs-again',
    breaks: 'a keyed retry says Idempotent-Replayed: true but runs again',
    section: 'D-30',
    profile: 'reference',
    caughtBy: 'S4.7-idempotency-key',
    because: /create completion sent again with its Idempotency-Key: the answer replayed \(nothing runs twice\)/,
    hooks: () => {
      const inner = onKeyed((r, before) => before.includes(fingerprint(r)) && (r.headers[KEY] = `${r.headers[KEY]}-again`))();
      return {
        request: inner.request,
        response(res, r) {
          if (r.headers[KEY]?.endsWith('-again') && res.status === 200) res.headers['idempotent-replayed'] = 'true';
        },
      };
    },
  },
  {
    id: 'idempotency-reuse-runs',
    breaks: 'a key sent with another body runs that body instead of 422 idempotency_key_reused',
    section: 'D-30',
    profile: 'reference',
    caughtBy: 'S4.6-idempotency-key',
    because: /send message with the key of another request: expected HTTP 422, got 200/,
    hooks: onKeyed((r, before) => before.length > 0 && !before.includes(fingerprint(r)) && delete r.headers[KEY]),
  },
  {
    id: 'idempotency-malformed-accepted',
    breaks: 'an Idempotency-Key with a space or a comma is taken, cleaned up, instead of 400',
    section: 'D-30',
    profile: 'reference',
    caughtBy: 'S4.1-idempotency-key',
    because: /create conversation with Idempotency-Key "a b": expected HTTP 400, got 200/,
    hooks: onKeyed((r) => (r.headers[KEY] = r.headers[KEY]!.replace(/[ ,]/g, '-'))),
  },
  {
    id: 'keyed-retry-new-response',
    breaks: 'the keyed retry of a cut stream starts a new response',
    section: 'D-30',
    profile: 'reference',
    caughtBy: 'S4.6-keyed-retry-continues',
    because: /the keyed retry of a cut stream: the id of its response\.created \(D-30: the same response\)/,
    hooks: onKeyed((r, before) => r.json?.stream === true && before.length > 0 && (r.headers[KEY] = `${r.headers[KEY]}-new`)),
  },
  {
    id: 'replay-unnamed',
    breaks: 'a replayed send message leaves out Parley-Response-Id',
    section: 'D-31',
    profile: 'reference',
    caughtBy: 'S4.6-idempotency-key',
    because: /a replayed send message: Parley-Response-Id names the replayed Response/,
    hooks: () => ({
      response(res) {
        if (res.headers['idempotent-replayed'] === 'true') delete res.headers['parley-response-id'];
      },
    }),
  },
];
