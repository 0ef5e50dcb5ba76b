// The raw baseline: node:http answering bodies of the same shape and size as Parley's, with none of
// Parley's work (no auth, validation, storage or logging). It is the floor the ratios compare against.
// `/sse-durable` is the floor of a durable first event (D-35): the same stream as `/sse`, after a small
// start record written to a file and fdatasynced, as Parley's begin does into a spare file.
import fsSync from 'node:fs';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { toConversation } from '../src/services/conversations.ts';
import { listenAsChild } from './child.ts';
import { sampleConversation } from './data.ts';

const sample = sampleConversation('app_demo', 1, 1);
const conversation = { ...toConversation(sample.record), items: sample.file.items };
const page = Array.from({ length: 20 }, (_, i) => toConversation(sampleConversation('app_demo', i, i).record));
const list = { object: 'list', data: page, first_id: page[0]!.id, last_id: page[19]!.id, has_more: true };
const response = {
  id: 'resp_0123456789abcdef01234567',
  object: 'response',
  created_at: sample.record.created_at,
  conversation_id: sample.record.id,
  status: 'completed',
  output: [sample.file.items[1]],
};

// The start records' file, open for appending as Parley's spare is; in the folder the bench gives (the
// disk Parley's data is on), else a temporary one; removed when the process ends.
const recordsDir = await fs.mkdtemp(path.join(process.argv[2] ?? os.tmpdir(), 'baseline-begin-'));
const records = await fs.open(path.join(recordsDir, 'begun.jsonl'), 'a');
process.on('exit', () => fsSync.rmSync(recordsDir, { recursive: true, force: true }));

function json(res: http.ServerResponse, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A start record of the shape of Parley's (D-35's LiveResponseStart: ids, time, the input), written and fdatasynced. */
async function begin(): Promise<void> {
  const start = {
    id: `resp_${Date.now().toString(16).padStart(24, '0')}`,
    app_id: 'app_demo',
    conversation_id: sample.record.id,
    created_at: Date.now(),
    input: { content: 'Tell me about the Montreal office.', metadata: null },
  };
  await records.write(`${JSON.stringify(start)}\n`);
  await records.datasync();
}

/** As many events as asked, each written on its own, like a stream relaying tokens. */
function sse(res: http.ServerResponse, url: string): void {
  const n = Number(new URL(url, 'http://x').searchParams.get('n') ?? 100);
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  for (let i = 0; i < n; i++) {
    res.write(
      `event: response.output_text.delta\ndata: ${JSON.stringify({ type: 'response.output_text.delta', sequence_number: i, delta: 't', output_index: 0, content_index: 0 })}\n\n`,
    );
    // Each event leaves on its own, as Parley sends them (node:http would hold them to the next tick).
    res.socket?.uncork();
  }
  res.end();
}

const server = http.createServer((req, res) => {
  const url = req.url ?? '/';
  if (req.method === 'GET' && url.startsWith('/get')) return json(res, conversation);
  if (req.method === 'GET' && url.startsWith('/list')) return json(res, list);
  if (req.method === 'GET' && url.startsWith('/sse-durable')) {
    void begin().then(() => sse(res, url));
    return;
  }
  if (req.method === 'GET' && url.startsWith('/sse')) return sse(res, url);
  // POST/PATCH: read and parse the JSON body, answer a resource of the size Parley answers.
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>) : {};
    if (url.startsWith('/message')) return json(res, response);
    json(res, { ...toConversation(sample.record), title: typeof body.title === 'string' ? body.title : null });
  });
});

listenAsChild(server);
