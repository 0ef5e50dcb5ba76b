// The one place an answer is written: a reply (a JSON body, an EventStream, an Asset, NoContent) or
// an error object. Stages and handlers return values (./reply.ts); only the server calls these.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { boundUnreadBody } from './body.ts';
import { lingeringClose } from './linger.ts';
import { Asset, NoContent, sendJson } from './reply.ts';
import { EventStream } from '../core/answers.ts';
import { streamSse } from './sse.ts';
import type { WireScenario } from './sse-scenario.ts';

/** Writes a reply with `headers` (a 200, or the reply's own status); an EventStream is written as it comes (D-18's keep-alive). */
export async function writeReply(
  req: IncomingMessage,
  res: ServerResponse,
  reply: unknown,
  headers: Record<string, string>,
  keepAliveMs?: number,
  wire?: WireScenario,
): Promise<void> {
  if (reply instanceof EventStream) await streamSse(res, reply.events, { keepAliveMs, headers, numbering: reply.numbering, wire });
  else if (reply instanceof Asset) {
    res.writeHead(reply.status, {
      ...headers,
      ...reply.headers,
      'content-type': reply.contentType,
      'content-length': Buffer.byteLength(reply.body),
    });
    res.end(req.method === 'HEAD' ? undefined : reply.body);
  } else if (reply instanceof NoContent) {
    res.writeHead(204, { ...headers, ...reply.headers });
    res.end();
  } else sendBounded(req, res, 200, reply, headers);
}

/** Sends a JSON answer; a body left unread is bounded (D-2), and a closing answer closes its socket. */
export function sendBounded(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string>,
): void {
  const final = boundUnreadBody(req, res, headers);
  sendJson(res, status, body, final);
  if (final.connection === 'close') res.once('finish', () => lingeringClose(req));
}
