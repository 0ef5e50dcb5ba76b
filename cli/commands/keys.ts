// `parley keys list|create|roll|revoke|scenario` (D-79, D-70, D-127): the team's API keys through the admin surface. A
// new key (create, roll) is printed once on stdout: the one exception to "the key is never printed".
import { Command, Option } from 'commander';
import { ApiKey, ApiKeyCreated, type ApiKeyT, CreateKeyRequest, RollKeyRequest } from '../../src/contract/admin.ts';
import { adminClient, checkedBody, confirm, parseDuration, show } from '../admin.ts';
import type { Session } from '../context.ts';
import { canAsk } from '../prompt.ts';
import { KeyScenario, SetKeyScenarioRequest } from '../../src/contract/scenarios.ts';
import { ago, table } from '../render.ts';

const HEADER = ['ID', 'TYPE', 'NAME', 'KEY', 'CREATED', 'LAST USED', 'STATUS'];

function status(k: ApiKeyT, nowS = Date.now() / 1000): string {
  if (k.revoked_at !== null) return `revoked ${ago(k.revoked_at)}`;
  if (k.expires_at !== null && k.expires_at <= nowS) return `expired ${ago(k.expires_at)}`;
  if (k.expires_at !== null) return `${k.rolled_to ? `rolled to ${k.rolled_to}, ` : ''}expires ${ago(k.expires_at)}`;
  return 'active';
}

function rows(keys: ApiKeyT[]): string[][] {
  return keys.map((k) => [
    k.id,
    k.type,
    k.name,
    k.redacted,
    ago(k.created_at),
    k.last_used_at === null ? 'never' : ago(k.last_used_at),
    status(k),
  ]);
}

export function keysCommand(session: Session): Command {
  const out = session.out;
  const group = new Command('keys')
    .description("the team's API keys: list, create, roll, revoke (needs parley admin login)")
    .addHelpText('after', '\nExample:\n  parley keys create --type secret --name "CI" --expires-in 30d\n');

  group
    .command('list')
    .alias('ls')
    .description('list the keys, redacted, with when each was last used')
    .addHelpText('after', "\nExample:\n  parley keys list --json | jq -r '.data[] | select(.revoked_at == null) | .id'\n")
    .action(async (_opts: unknown, cmd: Command) => {
      const { admin, g } = adminClient(session, cmd);
      const res = await admin.getAll('/keys', ApiKey);
      show(session, g, res, () => (res.data.data.length > 0 ? table(rows(res.data.data), HEADER) : '(no keys)\n'));
    });

  group
    .command('create')
    .description('create a key; prints it once on stdout (store it now: it cannot be shown again)')
    .addOption(
      new Option('--type <type>', 'secret (sk_live_…, for servers) or publishable (pk_live_…, for the widget)')
        .choices(['secret', 'publishable'])
        .makeOptionMandatory(),
    )
    .requiredOption('--name <name>', 'what the key is for')
    .option('--expires-in <duration>', 'lifetime such as 90d (default: no expiry)')
    .addHelpText('after', '\nExample:\n  parley keys create --type secret --name CI > ci-key.txt\n')
    .action(async (opts: { type: string; name: string; expiresIn?: string }, cmd: Command) => {
      const body = checkedBody(
        CreateKeyRequest,
        {
          type: opts.type,
          name: opts.name,
          expires_in_seconds: opts.expiresIn === undefined ? undefined : parseDuration(opts.expiresIn, '--expires-in'),
        },
        { name: '--name', type: '--type', expires_in_seconds: { flag: '--expires-in', duration: true } },
      );
      const { admin, g } = adminClient(session, cmd);
      const res = await admin.post('/keys', ApiKeyCreated, body);
      show(session, g, res, () => `${res.data.key}\n`);
      if (!g.json) out.note(`created ${res.data.id} (${res.data.type}, ${res.data.name}): the key above is shown this once`);
    });

  group
    .command('roll')
    .argument('<key_id>')
    .description('replace a key: the new one is printed once; the old one works until the grace period ends')
    .option('--expires-in <duration>', 'how long the old key keeps working, at most 7d (default 24h)')
    .addHelpText('after', '\nExample:\n  parley keys roll key_abc123 --expires-in 1h\n')
    .action(async (id: string, opts: { expiresIn?: string }, cmd: Command) => {
      const body = checkedBody(
        RollKeyRequest,
        { expires_in_seconds: opts.expiresIn === undefined ? undefined : parseDuration(opts.expiresIn, '--expires-in') },
        { expires_in_seconds: { flag: '--expires-in', duration: true } },
      );
      const { admin, g } = adminClient(session, cmd);
      const res = await admin.post(`/keys/${encodeURIComponent(id)}/roll`, ApiKeyCreated, body);
      show(session, g, res, () => `${res.data.key}\n`);
      if (!g.json)
        out.note(`rolled ${id} to ${res.data.id}: the new key above is shown this once; the old one works until its grace period ends`);
    });

  group
    .command('revoke')
    .argument('<key_id>')
    .description('revoke a key: refused at once, everywhere; asks first on a terminal')
    .option('-y, --yes', 'do not ask for confirmation')
    .addHelpText('after', '\nWithout a terminal (a script, a pipe) it never asks.\n\nExample:\n  parley keys revoke key_abc123 --yes\n')
    .action(async (id: string, opts: { yes?: boolean }, cmd: Command) => {
      const { admin, g } = adminClient(session, cmd);
      const path = `/keys/${encodeURIComponent(id)}/revoke`;
      // D-64: a key that is not there is the server's 404, not a question.
      const asks = !opts.yes && canAsk(session.io);
      const known = asks ? (await admin.getAll('/keys', ApiKey)).data.data.find((k) => k.id === id) : undefined;
      if (
        known &&
        !(await confirm(session, opts.yes, `Revoke ${id} (${known.name}, ${known.redacted})? Requests with it fail at once.`, `kept ${id}`))
      )
        return;
      const res = await admin.post(path, ApiKey, {});
      show(session, g, res, () => `revoked ${res.data.id}\n`);
    });

  group.addCommand(scenarioCommand(session));
  return group;
}

/** D-127: `parley keys scenario set <key_id> <step>…` and `clear <key_id>`: a script every request made with the key follows. */
function scenarioCommand(session: Session): Command {
  const group = new Command('scenario')
    .description('a script every request made with a key follows, its id the test id (docs/scenarios.md)')
    .addHelpText('after', '\nExample:\n  parley keys scenario set key_abc123 "status=503" ""\n  parley keys scenario clear key_abc123\n');
  group
    .command('set')
    .argument('<key_id>')
    .argument('<steps...>', 'one directive list per request, in order ("" runs the request as it is); past the end, the last again')
    .description("make the key's requests follow a script (its test run: GET /v1/apps/{app}/test-runs/<key_id>)")
    .addHelpText('after', '\nExample:\n  parley keys scenario set key_abc123 "status=429;retry-after=1" "status=503" ""\n')
    .action(async (id: string, steps: string[], _opts: unknown, cmd: Command) => {
      const body = checkedBody(SetKeyScenarioRequest, { script: steps }, { script: '<steps>' });
      const { admin, g } = adminClient(session, cmd);
      const res = await admin.put(`/keys/${encodeURIComponent(id)}/scenario`, KeyScenario, body);
      show(session, g, res, () => `${id} follows ${steps.length} step${steps.length === 1 ? '' : 's'}\n`);
    });
  group
    .command('clear')
    .argument('<key_id>')
    .description("the key's requests follow no script any more (its test run stays readable for its hour)")
    .addHelpText('after', '\nExample:\n  parley keys scenario clear key_abc123\n')
    .action(async (id: string, _opts: unknown, cmd: Command) => {
      const { admin, g } = adminClient(session, cmd);
      const res = await admin.delete(`/keys/${encodeURIComponent(id)}/scenario`, KeyScenario);
      show(session, g, res, () => `${id} follows no script\n`);
    });
  return group;
}
