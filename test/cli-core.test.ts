// cli/core/error.ts: the words for network failures, shared by the CLI and the conformance suite, and
// the ApiError of a non-2xx answer with or without an error object.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiError, describeNetworkError } from '../cli/core/error.ts';

test('network failures in words, from undici (code on the error or its first error) and from fetch (code on the cause)', () => {
  assert.equal(
    describeNetworkError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })),
    'connection refused (is the server running?)',
  );
  assert.equal(
    describeNetworkError(Object.assign(new AggregateError([Object.assign(new Error('x'), { code: 'ECONNREFUSED' })]), {})),
    'connection refused (is the server running?)',
  );
  assert.equal(
    describeNetworkError(new TypeError('fetch failed', { cause: Object.assign(new Error('getaddrinfo'), { code: 'ENOTFOUND' }) })),
    'host not found',
  );
  assert.equal(
    describeNetworkError(new TypeError('fetch failed', { cause: Object.assign(new Error('y'), { code: 'UND_ERR_SOCKET' }) })),
    'the connection was closed by the server',
  );
  assert.equal(
    describeNetworkError(new TypeError('fetch failed', { cause: Object.assign(new Error('broken'), { code: 'EPIPE' }) })),
    'fetch failed (EPIPE)',
  );
  assert.equal(
    describeNetworkError(new TypeError('fetch failed', { cause: new Error('other side closed') })),
    'fetch failed (other side closed)',
  );
  assert.equal(describeNetworkError(new Error('plain')), 'plain');
});

test('ApiError.fromBody reads the error object, or keeps the status and an excerpt of what came instead', () => {
  const e = ApiError.fromBody(404, JSON.stringify({ error: { message: 'gone', type: 'not_found', param: null, code: null } }), {
    'x-request-id': 'req_1',
  });
  assert.deepEqual([e.status, e.type, e.message, e.param, e.code, e.requestId], [404, 'not_found', 'gone', null, null, 'req_1']);
  const html = ApiError.fromBody(502, '<html>\n  Bad   gateway </html>', {});
  assert.deepEqual([html.type, html.message], ['http_error', 'HTTP 502 without an error object: <html> Bad gateway </html>']);
});
