// SSE events leave when they are written, even while the producer keeps running on microtasks.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import type { UnsequencedEvent } from '../src/contract/index.ts';
import { streamSse } from '../src/http/sse.ts';

test('each event is handed to the socket before the producer is asked for the next one', async () => {
  const corkedAtPull: number[] = [];
  const server = http.createServer((_req, res) => {
    async function* events(): AsyncGenerator<UnsequencedEvent> {
      // No I/O between events, like the local engine: only microtasks.
      yield { event: 'response.created', data: { id: 'resp_1', object: 'response', status: 'in_progress' } };
      for (let i = 0; i < 3; i++) {
        corkedAtPull.push(res.socket!.writableCorked);
        yield { event: 'response.output_text.delta', data: { delta: 'x', output_index: 0, content_index: 0 } };
      }
      corkedAtPull.push(res.socket!.writableCorked);
      yield { event: 'response.completed', data: { id: 'resp_1', status: 'completed' } };
    }
    void streamSse(res, events());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    const text = await res.text();
    assert.equal(text.split('event: ').length - 1, 5);
    // A corked socket holds the events until the producer stops; none may be held.
    assert.deepEqual(corkedAtPull, [0, 0, 0, 0]);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
