// The answers only the transport makes, as values: an Asset or NoContent (the answers services make,
// an EventStream or a JsonText, are core/answers.ts); and `sendJson`, the one place a JSON answer's type
// and length are set. Only the server writes an answer (src/http/server.ts); a stage such
// as idempotency wraps it after `next()`, as hono middleware does, and never touches the response object.
import type { ServerResponse } from 'node:http';
import { JsonText } from '../core/answers.ts';

/** A file served as is (the widget's script, the playground's page): its type, bytes and headers (caching, CSP). */
export class Asset {
  constructor(
    readonly contentType: string,
    readonly body: string | Buffer,
    readonly headers: Readonly<Record<string, string>> = {},
    readonly status = 200,
  ) {}
}

/** An empty 204 with its headers (a CORS preflight's). */
export class NoContent {
  constructor(readonly headers: Readonly<Record<string, string>>) {}
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = body instanceof JsonText ? body.text : JSON.stringify(body);
  res.writeHead(status, {
    ...headers,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}
