// `parley apps list|get|create|update` (D-79, D-71): the team's apps through the admin surface.
// Create and update take the same options; each is sent only when given, and the body is checked
// with the contract's own schema before it is sent.
import { Command } from 'commander';
import { AdminApp, type AdminAppT, CreateAppRequest, listOf, UpdateAppRequest } from '../../src/contract/admin.ts';
import { adminClient, checkedBody, commaList, show } from '../admin.ts';
import type { Session } from '../context.ts';
import { UsageError } from '../io.ts';
import { table } from '../render.ts';

const HEADER = ['ID', 'NAME', 'ACTIVE', 'STREAM', 'PLAN', 'MODEL', 'WIDGET'];

interface AppOptions {
  name?: string;
  active?: boolean;
  stream?: boolean;
  generativeUi?: boolean;
  plan?: string;
  agentName?: string;
  agentActive?: boolean;
  model?: string;
  instructions?: string;
  knowledgeBase?: string;
  origins?: string;
  widget?: boolean;
}

/** Each field's one flag (D-71's body): a refusal of `agent.model` names `--model`, not the whole agent group. */
const FLAGS = {
  name: '--name',
  active: '--active/--inactive',
  stream: '--stream/--no-stream',
  generative_ui: '--generative-ui/--no-generative-ui',
  plan: '--plan',
  'agent.name': '--agent-name',
  'agent.active': '--agent-active/--agent-inactive',
  'agent.model': '--model',
  'agent.instructions': '--instructions',
  'agent.knowledge_base': '--knowledge-base',
  widget: '--origins',
};

/** The request body of the options given (undefined fields are not sent). */
function bodyOf(o: AppOptions): Record<string, unknown> {
  const agent = {
    name: o.agentName,
    active: o.agentActive,
    model: o.model,
    instructions: o.instructions,
    knowledge_base: o.knowledgeBase === undefined ? undefined : o.knowledgeBase === 'none' ? null : o.knowledgeBase,
  };
  if (o.widget === false && o.origins !== undefined) throw new UsageError('--origins and --no-widget cannot be combined');
  return {
    name: o.name,
    active: o.active,
    stream: o.stream,
    generative_ui: o.generativeUi,
    plan: o.plan,
    agent: Object.values(agent).some((v) => v !== undefined) ? agent : undefined,
    widget: o.widget === false ? null : o.origins === undefined ? undefined : { origins: commaList(o.origins) },
  };
}

/** The options of create and update. */
function withAppOptions(cmd: Command): Command {
  return cmd
    .option('--name <name>', 'the app name')
    .option('--active', 'serve the app (the default of a new app)')
    .option('--inactive', "refuse the app's requests (app_inactive)")
    .option('--stream', 'stream replies by default')
    .option('--no-stream', 'answer JSON by default')
    .option('--generative-ui', 'let the agent send data_spec forms')
    .option('--no-generative-ui', 'no data_spec forms')
    .option('--plan <plan>', 'the plan (its limits and credits)')
    .option('--agent-name <name>', "the agent's name")
    .option('--agent-active', 'the agent answers')
    .option('--agent-inactive', 'the agent is off')
    .option('--model <model>', 'local, ollama:<model> or openai:<model>')
    .option('--instructions <text>', "the agent's instructions")
    .option('--knowledge-base <name>', 'a knowledge/ folder of the fixtures, or none')
    .option('--origins <list>', "the widget's allowed origins, comma-separated (sets up the widget)")
    .option('--no-widget', 'remove the widget (D-47)');
}

/** commander keeps --active/--inactive apart: one boolean, or a usage error when both are given. */
function pair(o: Record<string, unknown>, on: string, off: string): boolean | undefined {
  if (o[on] && o[off]) throw new UsageError(`--${on} and --${off} cannot be combined`);
  return o[on] ? true : o[off] ? false : undefined;
}

function optionsOf(o: Record<string, unknown>): AppOptions {
  // --stream defined before --no-stream leaves the default undefined (commander): sent only when given.
  return {
    ...(o as AppOptions),
    active: pair(o, 'active', 'inactive'),
    agentActive: pair(o, 'agentActive', 'agentInactive'),
    // --no-widget alone defaults to true: only its false is a request.
    widget: o.widget === false ? false : undefined,
  };
}

function rows(apps: AdminAppT[]): string[][] {
  return apps.map((a) => [
    a.id,
    a.name,
    a.active ? 'yes' : 'no',
    a.stream ? 'yes' : 'no',
    a.plan,
    a.agent.model,
    a.widget ? a.widget.origins.join(',') || '(no origins)' : '-',
  ]);
}

function detail(a: AdminAppT): string {
  const w = a.widget;
  return [
    `${a.id}  ${a.name}  ${a.active ? 'active' : 'inactive'}  plan ${a.plan}`,
    `stream by default: ${a.stream ? 'yes' : 'no'}; generative UI: ${a.generative_ui ? 'yes' : 'no'}`,
    `agent: ${a.agent.name} (${a.agent.active ? 'active' : 'inactive'}), model ${a.agent.model}, knowledge base ${a.agent.knowledge_base ?? 'none'}`,
    w
      ? `widget: origins ${w.origins.join(', ') || '(none)'}; identity secret ${w.identity_secret_set ? `set (${w.identity_secret_redacted})` : 'not set'}`
      : 'widget: none',
  ].join('\n');
}

export function appsCommand(session: Session): Command {
  const group = new Command('apps')
    .description("the team's apps: list, get, create, update (needs parley admin login)")
    .addHelpText('after', '\nExample:\n  parley apps update app_demo --model ollama:llama3.2 --stream\n');

  group
    .command('list')
    .alias('ls')
    .description("the team's apps")
    .addHelpText('after', "\nExample:\n  parley apps list --json | jq -r '.data[].id'\n")
    .action(async (_o: unknown, cmd: Command) => {
      const { admin, g } = adminClient(session, cmd);
      const res = await admin.get('/apps', listOf(AdminApp));
      show(session, g, res, () => (res.data.data.length > 0 ? table(rows(res.data.data), HEADER) : '(no apps)\n'));
    });

  group
    .command('get')
    .argument('<app_id>')
    .description('an app: its settings, agent and widget')
    .addHelpText('after', '\nExample:\n  parley apps get app_demo\n')
    .action(async (id: string, _o: unknown, cmd: Command) => {
      const { admin, g } = adminClient(session, cmd);
      const res = await admin.get(`/apps/${encodeURIComponent(id)}`, AdminApp);
      show(session, g, res, () => `${detail(res.data)}\n`);
    });

  withAppOptions(group.command('create'))
    .description('a new app: active, not streaming, an Assistant on the embedded engine, unless told otherwise')
    .addHelpText('after', '\nExample:\n  parley apps create --name Support --origins https://shop.example\n')
    .action(async (o: Record<string, unknown>, cmd: Command) => {
      const body = checkedBody(CreateAppRequest, bodyOf(optionsOf(o)), FLAGS);
      const { admin, g } = adminClient(session, cmd);
      const res = await admin.post('/apps', AdminApp, body);
      show(session, g, res, () => `${detail(res.data)}\n`);
    });

  withAppOptions(group.command('update'))
    .argument('<app_id>')
    .description('change an app: served by the next request (D-71)')
    .addHelpText('after', '\nExample:\n  parley apps update app_demo --inactive\n')
    .action(async (id: string, o: Record<string, unknown>, cmd: Command) => {
      const body = checkedBody(UpdateAppRequest, bodyOf(optionsOf(o)), FLAGS);
      if (Object.values(body).every((v) => v === undefined)) throw new UsageError('nothing to change: give at least one option');
      const { admin, g } = adminClient(session, cmd);
      const res = await admin.patch(`/apps/${encodeURIComponent(id)}`, AdminApp, body);
      show(session, g, res, () => `${detail(res.data)}\n`);
    });
  return group;
}
