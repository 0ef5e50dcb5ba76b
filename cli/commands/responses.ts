// `parley responses get|events|cancel`: resumable responses, an extension of the interface
// (docs/responses.md, D-30…D-39): a reply looked up while it runs, its events resumed, a reply stopped.
import { Command } from 'commander';
import type { MessageResponse } from '../client.ts';
import { inApp, type Session } from '../context.ts';
import { UsageError, type Output } from '../io.ts';
import { renderResponse } from '../render.ts';
import { printStream } from './messages.ts';

/** A response as looked up: `in_progress` has no final status line yet. */
function showResponse(out: Output, r: MessageResponse): void {
  if (r.status !== 'in_progress') {
    renderResponse(out, r);
    return;
  }
  renderResponse(out, { ...r, status: 'completed' }, false);
  out.note(`[in_progress ${r.id}]`);
}

export function responsesCommand(session: Session): Command {
  const out = session.out;
  const cmd = new Command('responses').description('look up, resume or cancel a reply (an extension: docs/responses.md)').addHelpText(
    'after',
    `
Send message names its response in the Parley-Response-Id header: parley send --verbose prints it on
stderr as soon as the reply starts ("< parley-response-id: resp_…"), so that it can be cancelled while it runs.

Examples:
  parley responses get resp_abc123
  parley responses events resp_abc123 --starting-after 7
  parley responses cancel resp_abc123
`,
  );
  cmd
    .command('get')
    .description('the response as it is now: in_progress with the output so far, then completed or failed (D-32)')
    .argument('<response_id>')
    .addHelpText('after', '\nExample:\n  parley responses get resp_abc123 --json | jq .status\n')
    .action(async (id: string, _opts: unknown, c: Command) => {
      const { client, g } = session.client(c);
      const res = await inApp(g, id, client.getResponse(id));
      if (g.json) return out.line(res.raw);
      showResponse(out, res.data);
    });
  cmd
    .command('events')
    .description('the events after --starting-after as first sent, then the live ones to the end (D-32)')
    .argument('<response_id>')
    .option('--starting-after <n>', 'the last sequence number seen (default: every event)', '-1')
    .addHelpText('after', '\nExample:\n  parley responses events resp_abc123 --starting-after 7 --json\n')
    .action(async (id: string, opts: { startingAfter: string }, c: Command) => {
      const { client, g } = session.client(c);
      if (!/^(-1|0|[1-9][0-9]*)$/.test(opts.startingAfter))
        throw new UsageError(`--starting-after must be a sequence number or -1 (got ${JSON.stringify(opts.startingAfter)})`);
      await printStream(out, await inApp(g, id, client.streamResponseEvents(id, Number(opts.startingAfter))), g.json);
    });
  cmd
    .command('cancel')
    .description('stop a running reply: it ends failed with code cancelled, its output so far kept (D-33)')
    .argument('<response_id>')
    .addHelpText('after', '\nExample:\n  parley responses cancel resp_abc123\n')
    .action(async (id: string, _opts: unknown, c: Command) => {
      const { client, g } = session.client(c);
      const res = await inApp(g, id, client.cancelResponse(id));
      if (g.json) return out.line(res.raw);
      const r = res.data;
      if (r.status === 'failed' && r.error?.code === 'cancelled') {
        renderResponse(out, { ...r, status: 'completed' }, false);
        out.note(`[cancelled ${r.id}]`);
        return;
      }
      // Finished before the cancel: shown as it ended.
      showResponse(out, r);
    });
  return cmd;
}
