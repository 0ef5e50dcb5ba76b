// Reading request bodies sent without a Content-Length (chunked): the cap holds while streaming (D-2).
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { APP, KEY, startTestServer, type TestServer } from './support/helpers.ts';

let server: TestServer;
before(async () => {
  server = await startTestServer();
});
after(() => server.close());

/** POSTs `chunks` with Transfer-Encoding: chunked; resolves with the status and parsed body. */
function chunkedPost(path: string, chunks: string[]): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: server.port,
        method: 'POST',
        path: `/v1${path}`,
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'transfer-encoding': 'chunked' },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
      },
    );
    // The server may answer and close before every chunk is sent: that is the point of the cap.
    req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? undefined : reject(err)));
    for (const c of chunks) req.write(c);
    req.end();
  });
}

describe('request bodies without Content-Length', () => {
  test('a chunked body is read whole', async () => {
    const res = await chunkedPost(`/apps/${APP}/conversations`, ['{"title":', '"in two chunks"}']);
    assert.equal(res.status, 200);
    assert.equal(res.body.title, 'in two chunks');
  });

  test('a chunked body over 1 MiB is 413 body_too_large and creates nothing (D-2)', async () => {
    const before = (await server.call('GET', `/apps/${APP}/conversations?limit=100`)).body.data.length;
    const piece = 'x'.repeat(64 * 1024);
    const chunks = ['{"title":"', ...Array.from({ length: 20 }, () => piece), '"}'];
    const res = await chunkedPost(`/apps/${APP}/conversations`, chunks);
    assert.equal(res.status, 413);
    assert.equal(res.body.error.code, 'body_too_large');
    const afterCount = (await server.call('GET', `/apps/${APP}/conversations?limit=100`)).body.data.length;
    assert.equal(afterCount, before);
  });
});
