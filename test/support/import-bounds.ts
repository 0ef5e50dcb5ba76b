// D-94: `parley data import` applies the API's bounds (sizes, ids) and takes only apps of the target,
// of the team the file names: anything else is refused with its line, and nothing is kept. The cases, run
// on the file store by test/import-bounds.test.ts and on PostgreSQL by test/proof/pg-import-bounds.test.ts.
import assert from 'node:assert/strict';
import { openDataPort, ImportError, type DataPort, type LineSource } from '../../src/store/port/index.ts';
import { loadTenants } from '../../src/store/fixtures.ts';
import { FIXTURES_DIR } from './helpers.ts';

const AT = 1_700_000_000;
const tenants = await loadTenants(FIXTURES_DIR);
const TARGET = new Map([...tenants.apps.values()].map((a) => [a.id, a.team_id]));

const header = (apps?: Record<string, string>) =>
  JSON.stringify({
    format: 'parley-export',
    version: 1,
    exported_at: '2026-01-01T00:00:00.000Z',
    source: 'file',
    ...(apps ? { apps } : {}),
  });
const message = (id: string, role: 'user' | 'assistant', text: string) => ({
  id,
  type: 'message',
  role,
  content: [{ type: 'text', text }],
  created_at: AT,
  response_id: 'resp_imp1',
});
interface Conv {
  record: Record<string, unknown>;
  items: unknown[];
  responses: unknown[];
}
const conversation = (id: string, seq: number): Conv => ({
  record: {
    id,
    app_id: 'app_demo',
    seq,
    created_at: AT,
    external_user_id: null,
    title: null,
    generated_title: {},
    metadata: {},
    deleted_at: null,
    message_count: 2,
  },
  items: [message(`msg_u${seq}`, 'user', 'hello'), message(`msg_a${seq}`, 'assistant', 'hi')],
  responses: [{ id: `resp_imp${seq}`, created_at: AT, status: 'completed' }],
});
const usage = { app_id: 'app_demo', kind: 'response', id: 'resp_imp1', at: AT, input_tokens: 5, output_tokens: 7 };

/** A file of two conversations and a usage entry: the second conversation (line 3) or the usage entry (line 4) changed by `bad`. */
function file(bad: (c: Conv, u: typeof usage) => void, apps?: Record<string, string>, raw?: (line: string) => string): string[] {
  const second = conversation('conv_imp2', 2);
  const u = { ...usage };
  bad(second, u);
  const lines = [conversation('conv_imp1', 1), second].map((c) => JSON.stringify({ type: 'conversation', ...c }));
  const end = { type: 'end', conversations: 2, items: 4, responses: 2, usage: 1 };
  end.items = 2 + second.items.length;
  end.responses = 1 + second.responses.length;
  return [header(apps), lines[0]!, raw ? raw(lines[1]!) : lines[1]!, JSON.stringify({ type: 'usage', usage: u }), JSON.stringify(end)];
}

const from = (lines: readonly string[]): LineSource =>
  async function* () {
    yield* lines;
  };

async function withPort<T>(where: { dataDir: string } | { databaseUrl: string }, fn: (port: DataPort) => Promise<T>): Promise<T> {
  const port = await openDataPort(where);
  try {
    return await fn(port);
  } finally {
    await port.close();
  }
}

const big = (n: number) => 'x'.repeat(n);
/** Each: a file, the line refused, and what its error says. */
const CASES: Array<[string, string[], number, RegExp]> = [
  [
    'a 9 MiB history',
    file((c) => c.items.push(message('msg_big', 'assistant', big(9 * 2 ** 20)))),
    3,
    /the history of conv_imp2 is \d+ bytes, more than the 8388608/,
  ],
  [
    'a 100,000-character title',
    file((c) => (c.record.title = big(100_000))),
    3,
    /record\.title must be 1 to 256 characters long \(got 100000\)/,
  ],
  ['a 300-character external_user_id', file((c) => (c.record.external_user_id = big(300))), 3, /record\.external_user_id must be 1 to 256/],
  ['20 KB of metadata', file((c) => (c.record.metadata = { k: big(20_000) })), 3, /record\.metadata must be at most 16384 bytes/],
  [
    'message_count 10^12',
    file((c) => (c.record.message_count = 1e12)),
    3,
    /record\.message_count: 1000000000000 is more than the 2 messages the conversation can hold/,
  ],
  ['an unknown app', file((c) => (c.record.app_id = 'app_nope')), 3, /app app_nope does not exist in the target/],
  [
    "an app of another team than the file's",
    file(
      () => {},
      { app_demo: 'team_demo', app_other: 'team_demo' },
      (l) => l.replace('"app_id":"app_demo"', '"app_id":"app_other"'),
    ),
    3,
    /app app_other belongs to team_demo in the file, to team_other in the target/,
  ],
  [
    'an app the header does not name',
    file(
      () => {},
      { app_demo: 'team_demo' },
      (l) => l.replace('"app_demo"', '"app_other"'),
    ),
    3,
    /app app_other is not among the apps the file's header names/,
  ],
  ['a conversation id of another kind', file((c) => (c.record.id = 'resp_imp2')), 3, /record\.id: "resp_imp2" must start with conv_/],
  [
    'a response id of another kind',
    file((c) => ((c.responses[0] as { id: string }).id = 'conv_x1')),
    3,
    /responses\.0\.id: "conv_x1" must start with resp_/,
  ],
  [
    'an item id that cannot be kept',
    file((c) => ((c.items[0] as { id: string }).id = 'msg u/1')),
    3,
    /items\.0\.id: "msg u\/1" must be 3 to 128 letters/,
  ],
  [
    'a __proto__ key',
    file(
      () => {},
      undefined,
      (l) => l.replace('"metadata":{}', '"metadata":{"__proto__":{"a":1}}'),
    ),
    3,
    /record\.metadata\.__proto__ is a key no store keeps/,
  ],
  [
    'a number beyond the double range',
    file(
      () => {},
      undefined,
      (l) => l.replace('"metadata":{}', '"metadata":{"n":1e999999}'),
    ),
    3,
    /record\.metadata\.n is a number beyond the range of a double/,
  ],
  ['10^12 tokens', file((_c, u) => (u.input_tokens = 1e12)), 4, /usage: a token count must be at most 2147483647/],
  ['a usage id of another kind', file((_c, u) => (u.kind = 'completion')), 4, /usage\.id: "resp_imp1" must start with cmpl_/],
];

/** Every case refused with its line on the store at `where`, then the good files imported whole. */
export async function importBounds(where: { dataDir: string } | { databaseUrl: string }): Promise<void> {
  for (const [name, lines, line, message] of CASES) {
    await assert.rejects(
      withPort(where, (p) => p.import(from(lines), TARGET)),
      (err: Error) => {
        assert.ok(err instanceof ImportError, `${name}: ${err.stack}`);
        assert.equal(err.line, line, `${name}: ${err.message}`);
        assert.match(err.message, message, name);
        return true;
      },
      name,
    );
  }
  // Nothing was kept by any of them: the file as written imports whole, and so does one naming its apps' teams.
  assert.deepEqual(await withPort(where, (p) => p.import(from(file(() => {})), TARGET)), {
    conversations: 2,
    items: 4,
    responses: 2,
    usage: 1,
    control: 0,
    audit: 0,
  });
  const named = file(() => {}, Object.fromEntries(TARGET)).map((l) => l.replaceAll('_imp', '_imq'));
  assert.equal((await withPort(where, (p) => p.import(from(named), TARGET))).conversations, 2);
}
