// Reading a JSON request body: the 1 MiB cap and the content-type check of D-2, D-1's invalid_json.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LIMITS, scanJson } from '../contract/index.ts';
import { ApiError, apiError, invalidRequest } from '../core/api-errors.ts';
import { lingeringClose } from './linger.ts';

const utf8 = new TextDecoder('utf-8', { fatal: true });

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  if (length !== undefined) return Number(length) > 0;
  return req.headers['transfer-encoding'] !== undefined;
}

function isJsonType(contentType: string | undefined): boolean {
  if (!contentType) return false;
  const type = contentType.split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

function tooLarge(): ApiError {
  return apiError('body_too_large', `The request body must be at most ${LIMITS.bodyBytes} bytes (1 MiB).`);
}

/**
 * The raw body, up to the cap. Plain 'data'/'end' listeners: the stream's async iterator showed in the
 * profile of a stream's time to first event (docs/benchmarks.md).
 */
function readAll(req: IncomingMessage): Promise<{ chunks: Buffer[]; size: number }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > LIMITS.bodyBytes) {
        cleanup();
        req.pause();
        reject(tooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve({ chunks, size });
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    // The client went away before the body was complete.
    const onClose = () => {
      if (req.complete) return;
      cleanup();
      reject(new Error('request body aborted'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/**
 * Reads and parses the body. An empty body reads as `undefined`, so that endpoints whose fields are
 * all optional accept it and the others report the missing field.
 */
export async function readJsonBody(req: IncomingMessage): Promise<unknown> {
  if (!hasBody(req)) {
    req.resume();
    return undefined;
  }
  if (!isJsonType(req.headers['content-type'])) {
    req.resume();
    throw apiError('unsupported_media_type', 'The request body must be JSON: send Content-Type: application/json.');
  }
  if (Number(req.headers['content-length'] ?? 0) > LIMITS.bodyBytes) throw tooLarge();

  let chunks: Buffer[];
  let size: number;
  try {
    ({ chunks, size } = await readAll(req));
  } catch (err) {
    if (err instanceof ApiError) throw err;
    // The client went away or was cut off for being too slow (408, see server.ts): not our failure.
    throw apiError('request_timeout', 'The request body did not arrive in full.');
  }
  if (size === 0) return undefined;

  let text: string;
  try {
    text = utf8.decode(Buffer.concat(chunks, size));
  } catch {
    throw invalidRequest('The request body is not valid UTF-8.', null, 'invalid_json');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw invalidRequest(`The request body is not valid JSON (${(err as Error).message}).`, null, 'invalid_json');
  }
  // Bound nesting before any recursive walk (validation, JSON.stringify) meets the document.
  const { depth, unkept } = scanJson(value, LIMITS.jsonDepth + 2);
  if (depth > LIMITS.jsonDepth + 2) {
    throw invalidRequest(`The request body is nested too deeply (more than ${LIMITS.jsonDepth} levels).`, null, 'invalid_value');
  }
  // D-94: refused rather than kept otherwise than sent (or lost at the next read).
  if (unkept) throw invalidRequest(`${unkept.path || 'The request body'} ${unkept.why}.`, unkept.path || null, 'invalid_value');
  return value;
}

/**
 * D-2 for a body no handler read (a 401, a 404 before the body, a GET with a body): node drains it
 * after the answer, however large, and keeps the connection. A body declared over the cap gets
 * Connection: close instead (the caller closes the socket once the answer is out); one of unknown
 * length (chunked) is drained up to the cap, then its socket is closed. A small one drains as usual,
 * keeping the connection. Returns the answer's headers.
 */
export function boundUnreadBody(req: IncomingMessage, res: ServerResponse, headers: Record<string, string>): Record<string, string> {
  if (req.complete || !hasBody(req) || headers.connection === 'close') return headers;
  const declared = req.headers['content-length'];
  if (declared !== undefined) return Number(declared) > LIMITS.bodyBytes ? { ...headers, connection: 'close' } : headers;
  let seen = 0;
  const onData = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen <= LIMITS.bodyBytes) return;
    req.off('data', onData);
    const cut = () => lingeringClose(req);
    if (res.writableFinished) cut();
    else res.once('finish', cut);
  };
  // Reading it ourselves (rather than node's drain, which drops 'data' listeners) keeps the count.
  req.on('data', onData);
  req.resume();
  return headers;
}
