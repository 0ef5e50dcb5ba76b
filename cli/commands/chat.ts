// `parley chat`: an interactive session on one conversation. At a terminal it edits like bash and
// `ollama run` (D-64) with its own line editor (D-112): Ctrl-C clears a half-typed line, Ctrl-D leaves,
// history persists, `"""` and a pasted block make one message, slash commands, replies wrapped to the
// terminal. Piped, each line is a message.
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { Command } from 'commander';
import { AbortedError, type ParleyClient } from '../client.ts';
import { inApp, type Globals, type Session } from '../context.ts';
import { FailedResponseError, parseMetadata, reportError, UsageError } from '../io.ts';
import { configDir } from '../profiles.ts';
import { renderResponse } from '../render.ts';
import { TerminalInput } from '../terminal-input.ts';
import { printStream } from './messages.ts';

const HISTORY_SIZE = 1000;
const FENCE = '"""';

const HELP = `Commands:
  /help             this list
  /new              start a new conversation
  /metadata [json]  show the metadata, or send this JSON object with the next message
  /json             show the raw events (NDJSON) instead of the text, or back
  /bye              leave (as Ctrl-D does)
Type """ to start and end a message of several lines; a pasted block is one message.
Ctrl-C clears the line or cancels a reply; Ctrl-D leaves.`;

/** The chat's history file: beside the profiles, owner-only (messages may hold anything). */
function historyFile(env: NodeJS.ProcessEnv): string {
  return path.join(configDir(env), 'chat_history');
}

/** Oldest first in the file (as bash keeps it), newest first for the editor. */
function loadHistory(file: string): string[] {
  try {
    return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).reverse().slice(0, HISTORY_SIZE);
  } catch {
    return [];
  }
}

/** One entry a line: a message of several lines is recalled in the session only. */
function saveHistory(file: string, history: string[]): void {
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const lines = history.filter((h) => !h.includes('\n')).reverse();
    fs.writeFileSync(file, `${lines.join('\n')}\n`, { mode: 0o600 });
  } catch {
    // A history that cannot be kept does not stop the conversation.
  }
}

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
Each message you type is sent; the reply streams in as it is generated, wrapped to the terminal.
Lines are edited as in bash (arrows, Ctrl-A/E/U/W, history with Up/Down kept across sessions).
Ctrl-C clears a half-typed line or cancels the reply in progress; Ctrl-D (or /bye) leaves.
${HELP}
With stdin piped, each line is a message and the session ends with the input.

Examples:
  parley chat
  parley chat conv_abc123
  printf 'hello\\nwhat can you do?\\n' | parley chat
`,
    )
    .action(
      async (conversationId: string | undefined, opts: { title?: string; externalUserId?: string; metadata?: string }, cmd: Command) => {
        const { client, g } = session.client(cmd);
        const io = session.io;
        let metadata = await parseMetadata(opts.metadata, io.stdin);
        const create = async () => {
          const created = await client.createConversation({ title: opts.title, external_user_id: opts.externalUserId });
          out.note(`conversation ${created.data.id} (continue it later with: parley chat ${created.data.id})`);
          return created.data.id;
        };
        if (conversationId === undefined) conversationId = await create();
        else {
          // Fails early, with the API's 404 and the hint at --app, on a wrong id.
          await inApp(g, conversationId, client.getConversation(conversationId));
          out.note(`conversation ${conversationId}`);
        }
        let conversation = conversationId;

        const interactive = Boolean(io.stdin.isTTY);
        const file = historyFile(io.env);
        // D-112: at a terminal, the chat's own line editor; piped, readline reads lines.
        const term = interactive
          ? new TerminalInput({ input: io.stdin, output: io.stdout, history: loadHistory(file), historySize: HISTORY_SIZE, prompt: '>>> ' })
          : undefined;
        const input = term ?? readline.createInterface({ input: io.stdin, terminal: false });
        if (term) {
          term.on('history', (h: string[]) => saveHistory(file, h));
          out.note('Type /help for commands, Ctrl-D or /bye to leave.');
        }
        let json = g.json;
        let current: AbortController | undefined;
        /** The reply under way, once its id is known (D-31), and whether Ctrl-C asked to cancel it. */
        let replying: string | undefined;
        let cancelling = false;
        let worst = 0;
        let leaving = false;
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
          if (term) {
            // Between a message and its reply (no prompt shown) there is nothing to clear.
            if (!term.prompting) return;
            // As bash does: a half-typed line is dropped, an empty one gets a hint.
            if (term.line !== '' || block !== undefined) {
              block = undefined;
              term.setPrompt('>>> ');
              return term.cancelLine();
            }
            out.note('\n(Ctrl-D or /bye to leave)');
            return term.prompt();
          }
          // A signal while waiting for piped input: leave as a shell expects.
          worst = 130;
          input.close();
        };
        term?.on('interrupt', onInterrupt);
        io.signals.on('SIGINT', onInterrupt);

        // The lines of a """ block.
        let block: string[] | undefined;

        /** The message a line completes, if it does: a """ block is gathered first (a paste is one line already, D-112). */
        const gather = (line: string): string | undefined => {
          if (block !== undefined) {
            if (line.trimEnd().endsWith(FENCE)) {
              block.push(line.trimEnd().slice(0, -FENCE.length));
              const message = block.join('\n');
              block = undefined;
              term?.setPrompt('>>> ');
              return message;
            }
            block.push(line);
            return undefined;
          }
          if (line.trimStart().startsWith(FENCE)) {
            const rest = line.trimStart().slice(FENCE.length);
            if (rest.trimEnd().endsWith(FENCE) && rest.trim().length >= FENCE.length) return rest.trimEnd().slice(0, -FENCE.length);
            block = rest === '' ? [] : [rest];
            term?.setPrompt('... ');
            return undefined;
          }
          return line;
        };

        const slash = async (text: string): Promise<void> => {
          const [name, ...args] = text.split(/\s+/);
          const arg = text.slice(name!.length).trim();
          switch (name) {
            case '/help':
            case '/?':
              return out.note(HELP);
            case '/bye':
            case '/exit':
              leaving = true;
              return;
            case '/new':
              conversation = await create();
              return;
            case '/json':
              json = !json;
              return out.note(json ? 'raw events on (NDJSON); /json again for text' : 'raw events off');
            case '/metadata':
              if (args.length === 0) {
                const c = await client.getConversation(conversation);
                return out.note(
                  `metadata: ${JSON.stringify(c.data.metadata ?? {})}${metadata ? ` (next message sends ${JSON.stringify(metadata)})` : ''}`,
                );
              }
              metadata = await parseMetadata(arg, io.stdin);
              return out.note(`the next message sends metadata ${JSON.stringify(metadata)}`);
            default:
              throw new UsageError(`unknown command ${name}: /help lists them`);
          }
        };

        // Lines wait here for the loop below.
        const queue: string[] = [];
        let wake: (() => void) | undefined;
        let ended = false;
        input.on('line', (line: string) => {
          queue.push(line);
          wake?.();
        });
        input.on('close', () => {
          ended = true;
          wake?.();
        });
        async function* lines() {
          for (;;) {
            while (queue.length > 0) yield queue.shift()!;
            if (ended) return;
            await new Promise<void>((r) => (wake = r));
            wake = undefined;
          }
        }

        try {
          term?.prompt();
          for await (const line of lines()) {
            const message = gather(line);
            const content = message?.trim() ?? '';
            if (content !== '') {
              current = new AbortController();
              try {
                if (content.startsWith('/') && !content.includes('\n')) await slash(content);
                else {
                  await send(client, g, conversation, content, metadata, current.signal, json);
                  metadata = undefined; // D-9: sent once, the snapshot stays on the conversation.
                }
              } catch (err) {
                out.endLine();
                if (err instanceof AbortedError || (cancelling && err instanceof FailedResponseError)) out.note('[cancelled]');
                else worst = Math.max(worst, reportError(out, err, json));
              } finally {
                current = undefined;
                replying = undefined;
                cancelling = false;
              }
              // Nobody reads the replies any more (`| head`), or /bye: stop.
              if (out.closed || leaving) break;
            }
            term?.prompt();
          }
        } finally {
          io.signals.off('SIGINT', onInterrupt);
          input.close();
          if (term) out.note('');
        }
        // Interactive sessions end well by Ctrl-D; a scripted one reports its worst failure.
        if (!interactive && worst !== 0) session.exitCode = worst;

        async function send(
          client: ParleyClient,
          g: Globals,
          id: string,
          content: string,
          meta: Record<string, unknown> | undefined,
          signal: AbortSignal,
          raw: boolean,
        ) {
          const reply = await client.sendMessage(id, { message: { role: 'user', content }, stream: true, metadata: meta }, { signal });
          // D-64: at a terminal, wrapped, and the status line only when it says something (a failure is an error; --verbose);
          // piped, each reply still ends with its status line, so that a script sees every reply's id.
          const width = interactive && out.stdout.isTTY ? out.stdout.columns : undefined;
          if (reply.kind === 'stream') {
            // D-31: the reply's id, known before its first event, is what Ctrl-C cancels (D-33).
            replying = reply.stream.responseId;
            await printStream(out, reply.stream, raw, {
              wrapWidth: width ? Math.max(20, width - 1) : undefined,
              quiet: interactive && !g.verbose,
            });
          } else if (raw) out.line(reply.response.raw);
          else renderResponse(out, reply.response.data);
        }
      },
    );
}
