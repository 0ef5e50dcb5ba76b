// D-73 over HTTP, for either store: conversations as the team sees them on /admin/v1 (deleted ones too,
// their full history and responses), restore, and the retention of deleted histories (kept, then
// purged: at once with 0 days, by the sweep at start past the retention). Run by
// test/admin-conversations.test.ts (file store) and test/proof/pg-admin-conversations.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AdminConversation, AdminConversationDetail } from '../../src/contract/admin-conversations.ts';
import { listOf } from '../../src/contract/admin.ts';
import { hashPassword } from '../../src/services/admin/passwords.ts';
import { FileStore } from '../../src/store/file/file-store.ts';
import { openDataPort } from '../../src/store/port/index.ts';
import type { Store } from '../../src/store/types.ts';
import { draft } from './control-suite.ts';
import { APP, startTestServer, type TestServer, tempDir } from './helpers.ts';
import { record, save } from './records.ts';

interface Answer {
  status: number;
  body: any;
}

/** A server, its admin surface and tokens of a demo admin, a demo viewer and the other team's admin. */
export interface AdminHarness {
  server: TestServer;
  admin: (method: string, path: string, token: string, body?: unknown) => Promise<Answer>;
  tokens: { admin: string; viewer: string; other: string };
}

/** Starts a server (on PostgreSQL when `databaseUrl` is given) with the members the suite signs in as. */
export async function adminHarness(
  opts: { databaseUrl?: string; dataDir?: string; deletedRetentionDays?: number } = {},
): Promise<AdminHarness> {
  const server = await startTestServer({ passwordHashCost: 10, ...opts });
  const origin = new URL(server.baseUrl).origin;
  const admin = async (method: string, path: string, token: string | null, body?: unknown): Promise<Answer> => {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${origin}/admin/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: await res.json() };
  };
  const hash = await hashPassword('member-password', 10);
  const member = (id: string, team: string, email: string, role: 'admin' | 'viewer') => ({
    id,
    team_id: team,
    email,
    name: null,
    role,
    created_at: 0,
    password_hash: hash,
    invite: null,
    last_sign_in_at: null,
  });
  if (!server.control.read().members.some((m) => m.id === 'mem_conv_viewer')) {
    await server.control.apply((d) => {
      d.members.push(member('mem_conv_viewer', 'team_demo', 'conv-viewer@demo.example', 'viewer'));
      d.members.push(member('mem_conv_other', 'team_other', 'conv-admin@other.example', 'admin'));
      return [draft('team_demo', 'member.added'), draft('team_other', 'member.added')];
    });
  }
  const token = async (email: string, password: string) => {
    const s = await fetch(`${origin}/admin/v1/sessions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    const body = (await s.json()) as { csrf_token: string };
    assert.equal(s.status, 200, JSON.stringify(body));
    const cookie = s.headers.get('set-cookie')!.split(';')[0]!;
    const t = await fetch(`${origin}/admin/v1/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': body.csrf_token },
      body: JSON.stringify({ name: 'tests' }),
    });
    return ((await t.json()) as { token: string }).token;
  };
  const tokens = {
    admin: await token('admin@demo.example', 'parley-demo-admin'),
    viewer: await token('conv-viewer@demo.example', 'member-password'),
    other: await token('conv-admin@other.example', 'member-password'),
  };
  return { server, admin, tokens };
}

const DAY = 86_400;

export function adminConversationsSuite(
  name: string,
  start: (opts?: { dataDir?: string; deletedRetentionDays?: number }) => Promise<AdminHarness>,
): void {
  describe(`conversations as the team sees them (D-73): ${name}`, () => {
    let h: AdminHarness;
    const base = `/apps/${APP}/conversations`;
    const create = async (body: Record<string, unknown>) => {
      const r = await h.server.call('POST', base, body);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      return (r.body as { id: string }).id;
    };
    const send = async (id: string, content: string) =>
      assert.equal((await h.server.call('POST', `${base}/${id}`, { message: { content }, stream: false })).status, 200);
    const del = async (id: string) => assert.equal((await h.server.call('DELETE', `${base}/${id}`)).status, 200);
    let kept: string;
    let live: string;
    let before0: number;

    before(async () => {
      h = await start();
      before0 = Math.floor(Date.now() / 1000);
      live = await create({ title: 'Refund for ORDER 7', external_user_id: 'ada@shop', metadata: { plan: 'pro' } });
      kept = await create({ title: 'Shipping', external_user_id: 'bob', metadata: { tier: 'gold' } });
      await send(kept, 'Where is my parcel?');
      await send(live, 'I want a refund');
      await del(kept);
    });
    after(() => h.server.close());

    test('the list leaves deleted ones out by default; include and only show them with deleted_at and the history kept', async () => {
      const by = async (q: string) => {
        const r = await h.admin('GET', `${base}?${q}`, h.tokens.viewer);
        assert.equal(r.status, 200, JSON.stringify(r.body));
        listOf(AdminConversation).parse(r.body);
        return r.body.data as any[];
      };
      const ids = (rows: any[]) => rows.map((r) => r.id);
      assert.ok(ids(await by('')).includes(live));
      assert.ok(!ids(await by('')).includes(kept));
      assert.ok(!ids(await by('deleted=exclude')).includes(kept));
      const all = await by('deleted=include&limit=100');
      assert.ok(ids(all).includes(kept) && ids(all).includes(live));
      const only = await by('deleted=only');
      assert.deepEqual(ids(only), [kept]);
      const row = only[0];
      assert.ok(row.deleted_at >= before0);
      assert.deepEqual(
        [row.history, row.history_purge_at, row.history_purged_at, row.message_count, row.metadata, row.app_id],
        ['kept', row.deleted_at + 30 * DAY, null, 2, { tier: 'gold' }, APP],
      );
      const liveRow = all.find((r) => r.id === live);
      assert.deepEqual([liveRow.history, liveRow.deleted_at, liveRow.message_count], ['live', null, 2]);
      // q: a part of the title or the external user id, any case; external_user_id: exactly.
      assert.deepEqual(ids(await by('deleted=include&q=order%207')), [live]);
      assert.deepEqual(ids(await by('deleted=include&q=BOB')), [kept]);
      assert.deepEqual(ids(await by('deleted=include&external_user_id=ada%40shop')), [live]);
      assert.deepEqual(ids(await by('deleted=include&external_user_id=ada')), []);
      // The data plane still answers 404 for the deleted one (§3, D-11).
      assert.equal((await h.server.call('GET', `${base}/${kept}`)).status, 404);
    });

    test('D-158: q matches a generated title too, in any of its locales, never its locale keys', async () => {
      const untitled = await create({});
      await send(untitled, 'Hello there');
      const generated = (await h.server.call('GET', `${base}/${untitled}`)).body.generated_title as Record<string, string>;
      const [locale, title] = Object.entries(generated)[0] ?? [];
      assert.ok(locale && title, `a generated title: ${JSON.stringify(generated)}`);
      const found = async (q: string) =>
        ((await h.admin('GET', `${base}?deleted=include&limit=100&q=${encodeURIComponent(q)}`, h.tokens.viewer)).body.data as any[]).map(
          (r) => r.id,
        );
      assert.ok((await found(title.slice(0, 5).toUpperCase())).includes(untitled), `q=${title.slice(0, 5)} finds "${title}"`);
      assert.ok(!(await found(locale)).includes(untitled), 'the locale key is not searched');
    });

    test("the list pages in §4.2's shape: first_id, last_id, has_more, limit and after", async () => {
      const seen: string[] = [];
      let after: string | null = null;
      for (let i = 0; i < 50; i++) {
        const r = await h.admin('GET', `${base}?deleted=include&limit=1&order=asc${after ? `&after=${after}` : ''}`, h.tokens.admin);
        assert.equal(r.status, 200);
        assert.equal(r.body.first_id, r.body.data[0]?.id ?? null);
        assert.equal(r.body.last_id, r.body.data.at(-1)?.id ?? null);
        seen.push(...r.body.data.map((x: { id: string }) => x.id));
        if (!r.body.has_more) break;
        after = r.body.last_id;
      }
      assert.ok(seen.indexOf(live) < seen.indexOf(kept), 'creation order');
      assert.equal(new Set(seen).size, seen.length);
      const back = await h.admin('GET', `${base}?deleted=include&order=asc&before=${kept}`, h.tokens.admin);
      assert.equal(back.body.data.at(-1).id, live, 'before: the page that precedes the cursor, in the order asked');
    });

    test('a deleted conversation reads with its full history and responses', async () => {
      const r = await h.admin('GET', `${base}/${kept}`, h.tokens.viewer);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      AdminConversationDetail.parse(r.body);
      assert.equal(r.body.history, 'kept');
      assert.deepEqual(
        r.body.items.filter((i: { type: string }) => i.type === 'message').map((i: { role: string }) => i.role),
        ['user', 'assistant'],
      );
      assert.equal(r.body.items[0].content[0].text, 'Where is my parcel?');
      assert.equal(r.body.responses.length, 1);
      assert.deepEqual([r.body.responses[0].object, r.body.responses[0].status], ['response', 'completed']);
      assert.ok(r.body.responses[0].usage.total_tokens > 0);
    });

    test("another team's app or conversation is 404; bad input is a 400 naming its field; a viewer cannot restore", async () => {
      const other = await h.admin('GET', `${base}?deleted=include`, h.tokens.other);
      assert.deepEqual([other.status, other.body.error.type, other.body.error.param], [404, 'not_found', 'app_id']);
      for (const path of [`${base}/${kept}`, `${base}/${live}`]) {
        const r = await h.admin('GET', path, h.tokens.other);
        assert.deepEqual([r.status, r.body.error.param], [404, 'app_id']);
      }
      const restore = await h.admin('POST', `${base}/${kept}/restore`, h.tokens.other);
      assert.deepEqual([restore.status, restore.body.error.param], [404, 'app_id']);
      const elsewhere = await h.admin('GET', `/apps/app_genui/conversations/${kept}`, h.tokens.admin);
      assert.deepEqual(
        [elsewhere.status, elsewhere.body.error.param],
        [404, 'conversation_id'],
        'a conversation of another app of the team',
      );
      const unknown = await h.admin('GET', `${base}/conv_nope`, h.tokens.admin);
      assert.deepEqual([unknown.status, unknown.body.error.param], [404, 'conversation_id']);
      for (const [q, param] of [
        ['deleted=all', 'deleted'],
        ['limit=0', 'limit'],
        ['limit=101', 'limit'],
        ['after=conv_nope', 'after'],
        [`after=${live}&before=${kept}`, 'before'],
        ['colour=red', 'colour'],
      ]) {
        const r = await h.admin('GET', `${base}?${q}`, h.tokens.admin);
        assert.deepEqual([r.status, r.body.error.type, r.body.error.param], [400, 'invalid_request_error', param], q);
      }
      const viewer = await h.admin('POST', `${base}/${kept}/restore`, h.tokens.viewer);
      assert.deepEqual([viewer.status, viewer.body.error.code], [403, 'admin_role_required']);
      assert.equal((await h.admin('GET', `${base}/${kept}`, h.tokens.admin)).body.history, 'kept', 'nothing changed');
      assert.equal((await h.server.call('GET', `${base}/${kept}`)).status, 404);
    });

    test('an admin restores a kept conversation: live again on /v1 with its history, audited; twice is 409', async () => {
      const id = await create({ title: 'to restore' });
      await send(id, 'Keep this');
      await del(id);
      const r = await h.admin('POST', `${base}/${id}/restore`, h.tokens.admin);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.deepEqual([r.body.history, r.body.deleted_at, r.body.message_count, r.body.responses.length], ['live', null, 2, 1]);
      const v1 = await h.server.call('GET', `${base}/${id}`);
      assert.equal(v1.status, 200);
      assert.deepEqual((v1.body as { items: unknown[] }).items, r.body.items, 'the data plane reads the history restored');
      await send(id, 'And on it goes');
      const audit = await h.admin('GET', '/audit?action=conversation.restored', h.tokens.admin);
      const entry = audit.body.data.find((e: { target: { id: string } }) => e.target.id === id);
      assert.ok(entry, JSON.stringify(audit.body));
      assert.equal(entry.actor.email, 'admin@demo.example');
      assert.equal(entry.changes.deleted_at[1], null);
      assert.ok(entry.changes.deleted_at[0] >= before0);
      const again = await h.admin('POST', `${base}/${id}/restore`, h.tokens.admin);
      assert.deepEqual(
        [again.status, again.body.error.code, again.body.error.param],
        [409, 'conversation_not_restorable', 'conversation_id'],
      );
    });
  });

  describe(`the retention of deleted histories (D-73): ${name}`, () => {
    test('with 0 days a delete purges at once: the history reads empty, marked purged, and cannot be restored', async () => {
      const h = await start({ deletedRetentionDays: 0 });
      try {
        const base = `/apps/${APP}/conversations`;
        const c = await h.server.call('POST', base, { title: 'gone', metadata: { secret: 'x' } });
        const id = (c.body as { id: string }).id;
        await h.server.call('POST', `${base}/${id}`, { message: { content: 'hello' }, stream: false });
        assert.equal((await h.server.call('DELETE', `${base}/${id}`)).status, 200);
        const r = await h.admin('GET', `${base}/${id}`, h.tokens.admin);
        assert.equal(r.status, 200);
        assert.deepEqual(
          [r.body.history, r.body.items, r.body.responses, r.body.metadata, r.body.title, r.body.message_count],
          ['purged', [], [], {}, 'gone', 2],
        );
        assert.ok(r.body.history_purged_at >= r.body.deleted_at);
        assert.equal(r.body.history_purge_at, null);
        const restore = await h.admin('POST', `${base}/${id}/restore`, h.tokens.admin);
        assert.deepEqual([restore.status, restore.body.error.code], [409, 'conversation_not_restorable']);
      } finally {
        await h.server.close();
      }
    });

    test('the sweep at start purges histories deleted longer ago than the retention, and keeps the others', async () => {
      const dataDir = await tempDir();
      let h = await start({ dataDir });
      const base = `/apps/${APP}/conversations`;
      const ids: string[] = [];
      try {
        for (const title of ['old', 'recent']) {
          const id = ((await h.server.call('POST', base, { title })).body as { id: string }).id;
          await h.server.call('POST', `${base}/${id}`, { message: { content: title }, stream: false });
          ids.push(id);
        }
        const now = Math.floor(Date.now() / 1000);
        // Deleted 31 days and 29 days ago, as the store would have recorded it then.
        await h.server.store.updateConversation(ids[0]!, (r) => ({ ...r!, deleted_at: now - 31 * DAY }));
        await h.server.store.updateConversation(ids[1]!, (r) => ({ ...r!, deleted_at: now - 29 * DAY }));
        assert.equal((await h.admin('GET', `${base}/${ids[0]}`, h.tokens.admin)).body.history, 'kept');
      } finally {
        await h.server.close();
      }
      h = await start({ dataDir });
      try {
        const [old, recent] = await Promise.all(ids.map(async (id) => (await h.admin('GET', `${base}/${id}`, h.tokens.admin)).body));
        assert.deepEqual([old.history, old.items], ['purged', []]);
        assert.deepEqual([recent.history, recent.responses.length, recent.items[0].content[0].text], ['kept', 1, 'recent']);
      } finally {
        await h.server.close();
      }
    });
  });
}

/** D-73: exports a file store holding a kept and a purged conversation, imports it at `where`, and checks what `open` reads. */
export async function exportKeepsWhatIsKept(where: { dataDir: string } | { databaseUrl: string }, open: () => Store): Promise<void> {
  const source = await tempDir();
  const store = new FileStore({ dataDir: source });
  await store.open();
  try {
    await store.putConversation(record('conv_x1', { seq: 1, metadata: { keep: 1 } }));
    await store.putConversation(record('conv_x2', { seq: 2, metadata: { drop: 1 } }));
    for (const id of ['conv_x1', 'conv_x2']) {
      await store.saveResponse(save(id, `resp_${id}`));
      await store.updateConversation(id, (r) => ({ ...r!, deleted_at: 1_700_000_000 }));
    }
    await store.admin.trimKept('app_demo', 0, 1_700_000_100);
    assert.equal((await store.admin.get('conv_x2'))!.purgedAt, 1_700_000_100);
    await store.putConversation(record('conv_x3', { seq: 3, metadata: { keep: 3 } }));
    await store.saveResponse(save('conv_x3', 'resp_x3'));
    await store.updateConversation('conv_x3', (r) => ({ ...r!, deleted_at: 1_700_000_200 }));
  } finally {
    await store.close();
  }
  const lines: string[] = [];
  const port = await openDataPort({ dataDir: source });
  try {
    for await (const line of port.export()) lines.push(line);
  } finally {
    await port.close();
  }
  const exported = new Map(
    lines
      .map((l) => JSON.parse(l))
      .filter((l) => l.type === 'conversation')
      .map((l) => [l.record.id, l] as const),
  );
  assert.deepEqual([exported.get('conv_x2').items, exported.get('conv_x2').record.metadata], [[], {}]);
  assert.deepEqual([exported.get('conv_x3').items.length > 0, exported.get('conv_x3').record.metadata], [true, { keep: 3 }]);
  const p = await openDataPort(where);
  try {
    await p.import(async function* () {
      yield* lines;
    });
  } finally {
    await p.close();
  }
  const s = open();
  await s.open();
  try {
    assert.equal((await s.admin.get('conv_x3'))!.purgedAt, null, 'kept');
    assert.equal((await s.readHistory('conv_x3')).responses.length, 1);
    assert.equal((await s.admin.get('conv_x2'))!.purgedAt, 1_700_000_000, 'purged (at its deletion: the file says no more)');
  } finally {
    await s.close();
  }
}
