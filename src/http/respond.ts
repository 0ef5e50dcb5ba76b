// Writing JSON responses: one place that sets the content type and length.
import type { ServerResponse } from 'node:http';

/** A body already serialized to JSON, sent as is (a handler that keeps the bytes of what it serves). */
export class JsonText {
  constructor(readonly text: string | Buffer) {}
  toJSON(): unknown {
    return JSON.parse(this.text.toString());
  }
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
