// `parley chat`: an interactive session on one conversation; each line is a message, each reply streams.
import readline from 'node:readline';
import { Command } from 'commander';
import { AbortedError } from '../client.ts';
import type { Session } from '../context.ts';
import { FailedResponseError, parseMetadata, reportError } from '../io.ts';
import { renderResponse } from '../render.ts';
import { printStream } from './messages.ts';

export function chatCommand(session: Session): Command {
  const out = session.out;
  return new Command('chat')
    .description('talk with the agent: creates a conversation unless one is given')
    .argument('[conversation_id]', 'continue this conversation')
    .option('--title <title>', 'custom title of the conversation it creates')
    .option('--external-user-id <id>', 'external user id of the conversation it creates')
    .option('--metadata <json|@file>', 'metadata sent with the first message (a JSON object, or @file.json)')
    .addHelpText(
      'after',
      `
Each line you type is sent as a message; the reply streams in as it is generated.
Ctrl-C cancels the reply in progress and keeps the session; Ctrl-D leaves.
With stdin piped, each line is a message and the session ends with the input.

Examples:
  parley chat
  parley chat conv_abc123
  printf 'hello\\nwhat can you do?\\n' | parley chat
`,
    )
    .action(async (conversationId: string | undefined, opts: { title?: string; externalUserId?: string; metadata?: string }, cmd: Command) => {
      const { client, g } = session.client(cmd);
      const io = session.io;
      let metadata = await parseMetadata(opts.metadata, io.stdin);
      if (conversationId === undefined) {
        const created = await client.createConversation({ title: opts.title, external_user_id: opts.externalUserId });
        conversationId = created.data.id;
        out.note(`conversation ${conversationId} (continue it later with: parley chat ${conversationId})`);
      } else {
        // Fails early, with the API's 404, on a wrong id.
        await client.getConversation(conversationId);
        out.note(`conversation ${conversationId}`);
      }

      const interactive = Boolean(io.stdin.isTTY);
      const rl = readline.createInterface({ input: io.stdin, output: interactive ? io.stdout : undefined, terminal: interactive, prompt: 'you> ' });
      if (interactive) out.note('Ctrl-C cancels a reply, Ctrl-D leaves.');
      let current: AbortController | undefined;
      /** The reply under way, once its id is known (D-31), and whether Ctrl-C asked to cancel it. */
      let replying: string | undefined;
      let cancelling = false;
      let worst = 0;
      const onInterrupt = () => {
        if (current) {
          // D-33: the reply is cancelled through the API (it is saved as cancelled, the session goes
          // on); a server without the endpoint, or a reply not yet named, is cut as before (D-19).
          if (replying === undefined || cancelling) return current.abort();
          cancelling = true;
          const ctrl = current;
          void client.cancelResponse(replying).catch(() => ctrl.abort());
          return;
        }
        if (interactive) {
          out.note('\n(press Ctrl-D to leave)');
          return rl.prompt();
        }
        // A signal while waiting for piped input: leave as a shell expects.
        worst = 130;
        rl.close();
      };
      rl.on('SIGINT', onInterrupt);
      io.signals.on('SIGINT', onInterrupt);
      try {
        if (interactive) rl.prompt();
        for await (const line of rl) {
          const content = line.trim();
          if (content !== '') {
            current = new AbortController();
            try {
              const reply = await client.sendMessage(conversationId, { message: { role: 'user', content }, stream: true, metadata }, { signal: current.signal });
              metadata = undefined; // D-9: sent once, the snapshot stays on the conversation.
              if (reply.kind === 'stream') {
                replying = reply.stream.responseId;
                await printStream(out, reply.stream, g.json);
              }
              else if (g.json) out.line(reply.response.raw);
              else renderResponse(out, reply.response.data);
            } catch (err) {
              out.endLine();
              if (err instanceof AbortedError || (cancelling && err instanceof FailedResponseError)) out.note('[cancelled]');
              else worst = Math.max(worst, reportError(out, err, g.json));
            } finally {
              current = undefined;
              replying = undefined;
              cancelling = false;
            }
            // Nobody reads the replies any more (`| head`): stop sending messages.
            if (out.closed) break;
          }
          if (interactive) rl.prompt();
        }
      } finally {
        io.signals.off('SIGINT', onInterrupt);
        rl.close();
        if (interactive) out.note('');
      }
      // Interactive sessions end well by Ctrl-D; a scripted one reports its worst failure.
      if (!interactive && worst !== 0) session.exitCode = worst;
    });
}
