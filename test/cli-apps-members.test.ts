// `parley apps …` and `parley members …` (D-79, D-71, D-72), in-process against a real server through
// the admin login: tables and --json (the admin API's shapes), bodies checked by the contract before
// they are sent, another team's app the server's 404, and `members remove` confirming at a terminal.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { AdminApp, AdminMember, AdminMemberAdded } from '../src/contract/admin.ts';
import { type CliOptions, runCli, atTerminal as atTerminalWith } from './support/cli-helpers.ts';
import { startTestServer, TARGET_JSON, tempDir, type TestServer } from './support/helpers.ts';

const ADMIN = TARGET_JSON.admin as { email: string; password: string };

let server: TestServer;
let env: Record<string, string>;
before(async () => {
  server = await startTestServer({ passwordHashCost: 10 });
  env = { PARLEY_BASE_URL: server.baseUrl, XDG_CONFIG_HOME: await tempDir('parley-cli-apps-') };
  const login = await run(['admin', 'login', '--email', ADMIN.email, '--password-stdin'], { input: `${ADMIN.password}\n` });
  assert.equal(login.code, 0, login.stderr);
});
after(() => server.close());

const run = (args: string[], extra: CliOptions = {}) => runCli(args, { ...extra, env: { ...env, ...extra.env } });
const json = async (args: string[], extra: CliOptions = {}) => {
  const r = await run([...args, '--json'], extra);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
};

const atTerminal = (args: string[], typed: string) => atTerminalWith(args, typed, env);

describe('parley apps (D-71)', () => {
  test('list and get: a table and the admin shapes; another team’s app is the 404', async () => {
    const list = await run(['apps', 'list']);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^ID +NAME +ACTIVE +STREAM +PLAN +MODEL +WIDGET\n/);
    assert.match(list.stdout, /\napp_demo +/);
    const all = await json(['apps', 'list']);
    assert.ok(all.data.some((a: { id: string }) => a.id === 'app_demo'));
    for (const a of all.data) AdminApp.parse(a);
    assert.ok(!JSON.stringify(all).includes('app_other'), "another team's app is not listed");
    const got = await run(['apps', 'get', 'app_demo']);
    assert.match(got.stdout, /^app_demo {2}.+ {2}active {2}plan \w+\n/);
    const other = await run(['apps', 'get', 'app_other']);
    assert.equal(other.code, 1);
    assert.match(other.stderr, /not_found \(404\).*param: app_id/);
  });

  test('create and update send only the options given, checked by the contract first', async () => {
    const made = AdminApp.parse(await json(['apps', 'create', '--name', 'CLI app', '--origins', 'https://a.example', '--stream']));
    assert.deepEqual([made.name, made.active, made.stream, made.widget?.origins], ['CLI app', true, true, ['https://a.example']]);
    assert.equal(made.agent.model, 'local');
    const changed = AdminApp.parse(await json(['apps', 'update', made.id, '--inactive', '--no-stream', '--agent-name', 'Ana']));
    assert.deepEqual([changed.name, changed.active, changed.stream, changed.agent.name], ['CLI app', false, false, 'Ana']);
    assert.deepEqual(changed.widget?.origins, ['https://a.example'], 'the widget was not sent, so it stays');
    const text = await run(['apps', 'get', made.id]);
    assert.match(text.stdout, /inactive/);
    assert.match(text.stdout, /agent: Ana \(active\), model local/);
    const noWidget = AdminApp.parse(await json(['apps', 'update', made.id, '--no-widget']));
    assert.equal(noWidget.widget, null);
    assert.equal(server.control.read().apps.find((a) => a.id === made.id)!.active, false);
    const version = server.control.read().version;
    const badModel = await run(['apps', 'update', made.id, '--model', 'gpt-9']);
    assert.equal(badModel.code, 2);
    // The one flag at fault, not every option of the agent group.
    assert.match(badModel.stderr, /^error: --model: .*local, ollama:<model> or openai:<model>/s);
    assert.doesNotMatch(badModel.stderr, /--agent-name|--instructions/);
    const nothing = await run(['apps', 'update', made.id]);
    assert.equal(nothing.code, 2);
    assert.match(nothing.stderr, /nothing to change/);
    const both = await run(['apps', 'update', made.id, '--active', '--inactive']);
    assert.equal(both.code, 2);
    assert.equal(server.control.read().version, version, 'the refusals changed nothing');
  });
});

describe('parley members (D-72)', () => {
  test('add with a link or a password, list, update a role; --json prints the admin shapes', async () => {
    const invited = await run(['members', 'add', '--email', 'invited@demo.example', '--role', 'viewer', '--name', 'Inv']);
    assert.equal(invited.code, 0, invited.stderr);
    // D-72: the link to pass on opens the dashboard's set-password page, the token in its fragment.
    assert.match(invited.stdout, /^http:\/\/127\.0\.0\.1:\d+\/dashboard#\/invite\/[A-Za-z0-9_-]{43}\n$/);
    assert.match(invited.stderr, /pass the link above on/);
    const ready = AdminMemberAdded.parse(
      await json(['members', 'add', '--email', 'ready@demo.example', '--role', 'viewer', '--password-stdin'], {
        input: 'a long enough password\n',
      }),
    );
    assert.equal(ready.invite, null);
    assert.equal(ready.password_set, true);
    const list = await run(['members', 'list']);
    assert.match(list.stdout, /invited@demo\.example +Inv +viewer +invited/);
    assert.match(list.stdout, /ready@demo\.example +- +viewer +set/);
    const promoted = AdminMember.parse(await json(['members', 'update', ready.id, '--role', 'admin']));
    assert.equal(promoted.role, 'admin');
    const shortPassword = await run(['members', 'add', '--email', 'x@demo.example', '--role', 'viewer', '--password-stdin'], {
      input: 'short\n',
    });
    assert.equal(shortPassword.code, 2);
    assert.match(shortPassword.stderr, /--password-stdin/);
    const taken = await run(['members', 'add', '--email', 'ready@demo.example', '--role', 'viewer']);
    assert.equal(taken.code, 1);
    assert.match(taken.stderr, /email_taken/);
  });

  test('remove asks at a terminal (anything but y keeps), --yes and scripts do not ask; the last admin stays', async () => {
    const m = AdminMemberAdded.parse(await json(['members', 'add', '--email', 'leaving@demo.example', '--role', 'viewer']));
    const kept = await atTerminal(['members', 'remove', m.id], 'n\n');
    assert.equal(kept.code, 0, kept.stderr);
    assert.match(kept.stderr, new RegExp(`Remove ${m.id} \\(leaving@demo\\.example, viewer\\)\\? .*\\[y/N\\]`));
    assert.match(kept.stderr, new RegExp(`kept ${m.id}`));
    assert.ok(server.control.read().members.some((x) => x.id === m.id));
    const removed = await atTerminal(['members', 'remove', m.id], 'y\n');
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, new RegExp(`removed ${m.id}`));
    assert.ok(!server.control.read().members.some((x) => x.id === m.id));
    const unknown = await atTerminal(['members', 'remove', m.id], 'y\n');
    assert.equal(unknown.code, 1, 'a member who is not there is the 404, not a question');
    assert.ok(!unknown.stderr.includes('[y/N]'));
    const other = AdminMemberAdded.parse(await json(['members', 'add', '--email', 'script@demo.example', '--role', 'viewer']));
    const gone = await json(['members', 'remove', other.id]);
    assert.deepEqual(gone.deleted, true);
    // The last admin of a team stays (409 last_admin): the other admins go first.
    const admins = () => server.control.read().members.filter((x) => x.team_id === 'team_demo' && x.role === 'admin');
    for (const a of admins().filter((x) => x.email !== ADMIN.email))
      assert.equal((await run(['members', 'remove', a.id, '--yes'])).code, 0);
    const last = await run(['members', 'remove', admins()[0]!.id, '--yes']);
    assert.equal(last.code, 1);
    assert.match(last.stderr, /last_admin/);
  });

  test('without an admin login: exit 2 with the hint, before any request', async () => {
    for (const args of [
      ['members', 'list'],
      ['apps', 'list'],
    ]) {
      const r = await run(args, { env: { XDG_CONFIG_HOME: await tempDir('parley-cli-none-') } });
      assert.equal(r.code, 2);
      assert.match(r.stderr, /hint: parley admin login\n/);
    }
  });
});
