// `parley config` (§4.8) and `parley metrics` (§4.9).
import { Command } from 'commander';
import type { Session } from '../context.ts';
import { keyValues, shown } from '../render.ts';

export function configCommand(session: Session): Command {
  return new Command('config')
    .description("show the app's configuration (§4.8)")
    .addHelpText('after', '\nExample:\n  parley config --app app_demo\n')
    .action(async (_opts: unknown, cmd: Command) => {
      const { client, g } = session.client(cmd);
      const res = await client.getConfig();
      if (g.json) return session.out.line(res.raw);
      const c = res.data;
      // Whatever another implementation left out shows as `?` (the client warned about it already).
      const { name, config, ...agentRest } = c.agent ?? {};
      const { primary_color, secondary_color, ...configRest } = config ?? {};
      const pairs: Array<[string, string]> = [
        ['app', shown(c.app_id)],
        ['stream by default', shown(c.stream)],
        ['generative UI', shown(c.generative_ui)],
        ['agent', shown(name)],
        ['colors', `${shown(primary_color)} / ${shown(secondary_color)}`],
      ];
      for (const [k, v] of Object.entries({ ...configRest, ...agentRest })) pairs.push([k, typeof v === 'string' ? v : JSON.stringify(v)]);
      session.out.out(keyValues(pairs));
    });
}

export function metricsCommand(session: Session): Command {
  return new Command('metrics')
    .description("show the app's usage metrics (§4.9)")
    .addHelpText('after', '\nExample:\n  parley metrics --json | jq .total_messages\n')
    .action(async (_opts: unknown, cmd: Command) => {
      const { client, g } = session.client(cmd);
      const res = await client.getMetrics();
      if (g.json) return session.out.line(res.raw);
      const m = res.data;
      session.out.out(
        keyValues([
          ['conversations', shown(m.total_conversations)],
          ['messages', shown(m.total_messages)],
          ['users', shown(m.total_users)],
        ]),
      );
    });
}
