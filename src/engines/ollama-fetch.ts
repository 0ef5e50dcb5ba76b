// The fetch the Ollama engine hands to the `ollama` client: undici's `request` (no time limits, keep-alive)
// behind the WHATWG fetch signature, without fetch's own machinery on the hot path.
import { STATUS_CODES } from 'node:http';
import type { Readable } from 'node:stream';
import { Agent, fetch as undiciFetch, interceptors, request, type Dispatcher } from 'undici';

/** Statuses whose Response must have a null body (the WHATWG constructor throws otherwise). */
const NULL_BODY = new Set([101, 103, 204, 205, 304]);

/** undici's Agent options for Ollama: 0 turns off the limits (300 s each by default). */
const NO_TIME_LIMITS = { headersTimeout: 0, bodyTimeout: 0 } as const satisfies Agent.Options;

/**
 * Node's global fetch gives up when response headers take more than 300 s, which a loaded Ollama
 * can exceed (model load, long prompt evaluation); this one waits as long as the generation does,
 * and the caller's abort signal is what ends it.
 *
 * undici's `fetch` and its web-stream body are slower than `request` to the first NDJSON line
 * (docs/benchmarks.md), so a plain string-or-URL call with a string body (all the `ollama` client
 * makes) goes through `request` and gets a real `Response` around the raw body stream; anything
 * else (a `Request` object, a byte, stream or form body) takes undici's `fetch` on the same
 * dispatcher, as before. Transport failures reject with `TypeError('fetch failed', { cause })` and
 * a cut body errors with `TypeError('terminated')`, as fetch does, so the client and
 * `mapOllamaError` see the same errors either way.
 *
 * `makeAgent` builds the connection pool from NO_TIME_LIMITS (injectable so that tests can see it).
 */
export function patientFetch(makeAgent: (options: Agent.Options) => Dispatcher = (options) => new Agent(options)): typeof fetch {
  const dispatcher: Dispatcher = makeAgent({ ...NO_TIME_LIMITS }).compose(interceptors.redirect({ maxRedirections: 20 }));
  const slow = (input: Parameters<typeof fetch>[0], init?: RequestInit) =>
    undiciFetch(
      input as Parameters<typeof undiciFetch>[0],
      { ...(init as object), dispatcher } as Parameters<typeof undiciFetch>[1],
    ) as unknown as Promise<Response>;
  return (async (input: Parameters<typeof fetch>[0], init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : undefined;
    const body = init?.body;
    if (url === undefined || (body !== undefined && body !== null && typeof body !== 'string')) return slow(input, init);
    const signal = init?.signal ?? undefined;
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method: (init?.method ?? 'GET') as Dispatcher.HttpMethod,
        headers: plainHeaders(init?.headers),
        body: body ?? undefined,
        signal,
        dispatcher,
      });
    } catch (err) {
      if (signal?.aborted) throw signal.reason;
      throw new TypeError('fetch failed', { cause: err });
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      if (Array.isArray(value)) for (const v of value) headers.append(name, v);
      else if (value !== undefined) headers.append(name, value);
    }
    const status = res.statusCode;
    if (NULL_BODY.has(status) || init?.method === 'HEAD') {
      res.body.resume();
      return new Response(null, { status, statusText: STATUS_CODES[status] ?? '', headers });
    }
    return new Response(webStream(res.body as Readable, signal), { status, statusText: STATUS_CODES[status] ?? '', headers });
  }) as typeof fetch;
}

/** The request's headers as undici's `request` takes them (the `ollama` client passes a plain object). */
function plainHeaders(h: HeadersInit | undefined): Record<string, string> | undefined {
  if (h === undefined) return undefined;
  if (h instanceof Headers || Array.isArray(h)) return Object.fromEntries(new Headers(h));
  return h as Record<string, string>;
}

/**
 * The body as a byte stream that hands each chunk over as it arrives, pausing the socket while the
 * reader is behind. Cancelling it (the client's `abort()`) destroys the upstream request.
 */
function webStream(body: Readable, signal: AbortSignal | undefined): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        body.on('data', (chunk: Buffer) => {
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
          if ((controller.desiredSize ?? 1) <= 0) body.pause();
        });
        body.once('end', () => controller.close());
        body.once('error', (err) => controller.error(signal?.aborted ? signal.reason : new TypeError('terminated', { cause: err })));
      },
      pull() {
        body.resume();
      },
      cancel(reason) {
        body.destroy(reason instanceof Error ? reason : undefined);
      },
    },
    { highWaterMark: 16 },
  );
}
