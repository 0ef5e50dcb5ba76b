// `parley send` (§4.6) and `parley complete` (§4.7): one reply, rendered live when it streams.
import { Command } from 'commander';
import type { EventStream } from '../client.ts';
import { inApp, type Session } from '../context.ts';
import { FailedResponseError, ndjsonLine, parseMetadata, textArgument, type Output } from '../io.ts';
import {
  failureText,
  renderCompletion,
  renderResponse,
  renderStream,
  streamFailure,
  type StreamRendering,
  type StreamStart,
} from '../render.ts';

/** With --json: one event payload per line (see ndjsonLine); otherwise the live rendering. */
export async function printStream(out: Output, stream: EventStream, json: boolean, rendering: StreamRendering = {}): Promise<void> {
  try {
    await printEvents(out, stream, json, rendering);
  } catch (err) {
    // D-63: a reply that failed names its request, as an API error does.
    if (err instanceof FailedResponseError) err.requestId ??= stream.requestId;
    throw err;
  }
}

async function printEvents(out: Output, stream: EventStream, json: boolean, rendering: StreamRendering): Promise<void> {
  if (!json) {
    await renderStream(out, stream, rendering);
    return;
  }
  const start: StreamStart = {};
  for await (const e of stream.all()) {
    // Extension events are printed too, when their data is JSON (NDJSON must stay parseable).
    if ('unknown' in e) {
      try {
        out.line(ndjsonLine(e.event, e.raw));
      } catch {
        // Not JSON: nothing a JSON consumer could use.
      }
      continue;
    }
    out.line(ndjsonLine(e.event, e.raw));
    if (e.event === 'response.created') Object.assign(start, { id: e.data.id, object: e.data.object });
    if (e.event === 'response.failed') throw streamFailure(e.data, start);
  }
}

export function sendCommand(session: Session): Command {
  const out = session.out;
  return new Command('send')
    .description("send a message to a conversation and print the agent's reply (§4.6)")
    .argument('<conversation_id>')
    .argument('[text]', 'the message; read from stdin when absent or -')
    .option('--stream', 'ask for a stream of events (rendered live)')
    .option('--no-stream', 'ask for one JSON response')
    .option('--metadata <json|@file>', "replaces the conversation's metadata snapshot: a JSON object, or @file.json")
    .addHelpText(
      'after',
      `
Without --stream or --no-stream the app's default applies (GET config: "stream").
The reply's text goes to stdout; function calls and the form a reply builds (data_spec) to stderr, one line each,
then the final status. A failed response exits with 1.

Examples:
  parley send conv_abc123 "Where is my order?"
  echo "Summarise our exchange" | parley send conv_abc123 --stream
  parley send conv_abc123 "hi" --no-stream --json | jq '.output'
`,
    )
    .action(async (conversationId: string, text: string | undefined, opts: { stream?: boolean; metadata?: string }, cmd: Command) => {
      const { client, g } = session.client(cmd);
      const metadata = await parseMetadata(opts.metadata, session.io.stdin);
      const content = await textArgument(text, 'message text', session.io.stdin);
      const reply = await inApp(
        g,
        conversationId,
        client.sendMessage(conversationId, { message: { role: 'user', content }, stream: opts.stream, metadata }),
      );
      if (reply.kind === 'stream') return printStream(out, reply.stream, g.json);
      if (g.json) {
        out.line(reply.response.raw);
        const r = reply.response.data;
        if (r.status === 'failed') throw new FailedResponseError(failureText(r.id, r.error, r.object));
        return;
      }
      renderResponse(out, reply.response.data);
    });
}

export function completeCommand(session: Session): Command {
  const out = session.out;
  return new Command('complete')
    .description('one-shot completion: no conversation, no history (§4.7)')
    .argument('[prompt]', 'the instruction; read from stdin when absent or -')
    .option('--stream', 'stream the text as it is generated')
    .option('--no-stream', 'one JSON completion (the default)')
    .option('--fast', 'skip the reasoning step for the lowest latency')
    .option('--no-knowledge-search', 'do not let the agent search its knowledge base')
    .option('--metadata <json|@file>', 'context given to the agent as data: a JSON object, or @file.json')
    .addHelpText(
      'after',
      `
Examples:
  parley complete "Write a one-line welcome for new users" --fast
  cat notes.txt | parley complete --stream --no-knowledge-search
`,
    )
    .action(
      async (
        prompt: string | undefined,
        opts: { stream?: boolean; fast?: boolean; knowledgeSearch?: boolean; metadata?: string },
        cmd: Command,
      ) => {
        const { client, g } = session.client(cmd);
        const metadata = await parseMetadata(opts.metadata, session.io.stdin);
        const text = await textArgument(prompt, 'prompt', session.io.stdin);
        // Only what the user chose is sent: the interface's defaults apply to the rest.
        const body = { prompt: text, fast: opts.fast, knowledge_search: opts.knowledgeSearch === false ? false : undefined, metadata };
        if (opts.stream) return printStream(out, await client.streamCompletion(body), g.json);
        const res = await client.createCompletion(body);
        if (g.json) {
          out.line(res.raw);
          if (res.data.status === 'failed') throw new FailedResponseError(failureText(res.data.id, res.data.error, res.data.object));
          return;
        }
        renderCompletion(out, res.data);
      },
    );
}
