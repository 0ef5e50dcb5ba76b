// A fake OpenAI-compatible server (node:http on 127.0.0.1, port 0) speaking the Chat Completions wire
// format as real servers stream it: a role delta, content deltas, tool-call deltas whose arguments are
// split across chunks, a finish chunk, the usage chunk (choices: []), then `data: [DONE]`. Each test
// scripts the replies; every request's body, headers and end are kept for the test to look at.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface SeenRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** Resolves when the client closed or finished the request (a cancel aborts it upstream). */
  closed: Promise<void>;
}

/** One reply: what to do with the response. */
export type Reply = (res: ServerResponse, body: any) => void;

export interface FakeOpenAI {
  /** The base URL, ending in /v1, as OPENAI_BASE_URL takes it. */
  url: string;
  requests: SeenRequest[];
  /** The replies, one per call in order; the last repeats. */
  script(...replies: Reply[]): void;
  close(): Promise<void>;
}

export async function startFakeOpenAI(): Promise<FakeOpenAI> {
  const requests: SeenRequest[] = [];
  let replies: Reply[] = [];
  /** Calls answered since the replies were scripted. */
  let answered = 0;
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
      const body = text ? JSON.parse(text) : undefined;
      requests.push({ path: req.url ?? '', headers: req.headers, body, closed });
      const reply = replies[Math.min(++answered, replies.length) - 1];
      if (!reply) {
        res.writeHead(500).end('no reply scripted');
        return;
      }
      reply(res, body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    script: (...r) => {
      replies = r;
      answered = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const base = {
  id: 'chatcmpl-fake',
  object: 'chat.completion.chunk',
  created: 1_764_000_000,
  model: 'fake-model',
  system_fingerprint: 'fp_fake',
};

export const chunk = {
  role: () => ({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] }),
  text: (content: string) => ({ ...base, choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }] }),
  /** The first delta of a tool call: its id, type and name, with no arguments yet. */
  callStart: (index: number, name: string) => ({
    ...base,
    choices: [
      {
        index: 0,
        delta: { tool_calls: [{ index, id: `call_upstream_${index}`, type: 'function', function: { name, arguments: '' } }] },
        logprobs: null,
        finish_reason: null,
      },
    ],
  }),
  /** A piece of a tool call's arguments. */
  callArgs: (index: number, piece: string) => ({
    ...base,
    choices: [{ index: 0, delta: { tool_calls: [{ index, function: { arguments: piece } }] }, logprobs: null, finish_reason: null }],
  }),
  finish: (reason: 'stop' | 'tool_calls') => ({ ...base, choices: [{ index: 0, delta: {}, logprobs: null, finish_reason: reason }] }),
  usage: (prompt_tokens: number, completion_tokens: number) => ({
    ...base,
    choices: [],
    usage: { prompt_tokens, completion_tokens, total_tokens: prompt_tokens + completion_tokens },
  }),
};

/** A text answer in `pieces`, finished, with usage. */
export function textChunks(pieces: string[], usage: [number, number] = [20, 5]): object[] {
  return [chunk.role(), ...pieces.map(chunk.text), chunk.finish('stop'), chunk.usage(...usage)];
}

/** A tool call whose JSON arguments arrive in three pieces. */
export function toolChunks(name: string, args: Record<string, unknown>, usage: [number, number] = [30, 8]): object[] {
  const json = JSON.stringify(args);
  const third = Math.ceil(json.length / 3);
  return [
    chunk.role(),
    chunk.callStart(0, name),
    chunk.callArgs(0, json.slice(0, third)),
    chunk.callArgs(0, json.slice(third, 2 * third)),
    chunk.callArgs(0, json.slice(2 * third)),
    chunk.finish('tool_calls'),
    chunk.usage(...usage),
  ];
}

/**
 * Streams `chunks` as SSE; `gapMs` between them (a real model's pace), `done: false` leaves out
 * `[DONE]`, `cut` destroys the socket after the chunks, `hang` keeps the stream open.
 */
export function sse(chunks: object[], o: { gapMs?: number; done?: boolean; cut?: boolean; hang?: boolean } = {}): Reply {
  return (res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    let i = 0;
    const next = () => {
      if (res.destroyed) return;
      if (i < chunks.length) {
        res.write(`data: ${JSON.stringify(chunks[i++])}\n\n`);
        if (o.gapMs) setTimeout(next, o.gapMs);
        else next();
        return;
      }
      if (o.cut) res.destroy();
      else if (o.hang) return;
      else res.end(o.done === false ? '' : 'data: [DONE]\n\n');
    };
    next();
  };
}

/** An error answer as OpenAI sends one: `{"error": {message, type, code}}`. */
export function refusal(status: number, message: string, headers: Record<string, string> = {}): Reply {
  return (res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify({ error: { message, type: 'invalid_request_error', param: null, code: null } }));
  };
}

/** Never answers (its headers never come): the engine's timeout decides. */
export const silent: Reply = () => {};
