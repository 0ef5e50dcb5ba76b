// The floor: a raw node:http server answering the paths the bench asks with the bytes the target
// answered them (captured first), with none of an implementation's work. Streams write the same
// events at once; a held stream waits for its cancel; a create sends the target's delivery to a
// receiver. Each figure is reported against it, measured in the same run on the same machine.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the floor answers, as the target answered it during the capture. */
export interface Captured {
  conversation: string;
  list: string;
  created: string;
  response: string;
  /** A streamed reply's events as frames (`event:` and `data:` lines), in order. */
  frames: string[];
  /** The frames a held reply writes before its cancel (up to its first text). */
  heldFrames: string[];
  /** The terminal frame a cancelled reply ends with, and the cancel's answer. */
  cancelledFrame: string;
  cancelled: string;
  /** A webhook delivery's body, sent to `Floor.webhookUrl` after each create. */
  delivery?: string;
}

export interface Floor {
  /** Ends in `/v1`, as the target's does. */
  baseUrl: string;
  /** The app whose replies are held until cancelled (the target's `apps.slow`). */
  holdApp?: string;
  webhookUrl?: string;
  close(): Promise<void>;
}

export function frameOf(type: string, data: string): string {
  return `event: ${type}\ndata: ${data}\n\n`;
}

function json(res: http.ServerResponse, text: string): void {
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sse(res: http.ServerResponse, frames: string[], responseId: string, end: boolean): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'parley-response-id': responseId });
  for (const f of frames) {
    res.write(f);
    // Each event leaves on its own, as an implementation relaying a model's tokens sends it.
    res.socket?.uncork();
  }
  if (end) res.end();
}

/** The title of the creates whose delivery the webhook figure waits for (the floor sends only theirs). */
export const WEBHOOK_TITLE = 'parley bench webhook';

const RESPONSE_ID = 'resp_floor000000000000000000';

export async function startFloor(captured: Captured): Promise<Floor> {
  const held = new Map<string, http.ServerResponse>();
  let nextHeld = 0;
  const floor: Floor = { baseUrl: '', close: async () => {} };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = req.url ?? '/';
      const parts = url.split('?')[0]!.split('/').filter(Boolean); // v1, apps, a, kind, id, tail
      const [, , app, kind, id, tail] = parts;
      if (req.method === 'DELETE') return json(res, '{}');
      if (req.method === 'GET' && kind === 'conversations') return json(res, id ? captured.conversation : captured.list);
      if (req.method === 'GET' && kind === 'responses' && tail === 'events') return sse(res, captured.frames, id!, true);
      if (req.method === 'POST' && kind === 'responses' && tail === 'cancel') {
        const stream = held.get(id!);
        held.delete(id!);
        if (stream) stream.end(captured.cancelledFrame);
        return json(res, captured.cancelled);
      }
      let body: { stream?: unknown; title?: unknown } = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {}
      if (req.method === 'POST' && kind === 'conversations' && !id) {
        json(res, captured.created);
        if (floor.webhookUrl && captured.delivery && body.title === WEBHOOK_TITLE) {
          const out = http.request(floor.webhookUrl, { method: 'POST', headers: { 'content-type': 'application/json' } });
          out.on('error', () => {});
          out.on('response', (r) => r.resume());
          out.end(captured.delivery);
        }
        return;
      }
      if (req.method === 'POST' && kind === 'conversations' && id) {
        if (body.stream !== true) return json(res, captured.response);
        if (app === floor.holdApp) {
          const heldId = `${RESPONSE_ID.slice(0, -6)}${String(nextHeld++).padStart(6, '0')}`;
          held.set(heldId, res);
          return sse(res, captured.heldFrames, heldId, false);
        }
        return sse(res, captured.frames, RESPONSE_ID, true);
      }
      res.writeHead(404).end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  floor.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  floor.close = async () => {
    for (const r of held.values()) r.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return floor;
}
