// Preloaded into the benchmark's Parley (`--import`) by bench/lab/first-anatomy.ts: marks the steps of
// a streamed send, from its request event to its first write, by wrapping the methods that take them,
// so that the server runs its code unchanged (the wrapping adds its own cost: compare the client's
// figure with the benchmark's). Preloaded into the floor's server too, where only the request event
// and the first write are met. One request is marked at a time (the client sends one at a time); the
// medians, and each request's arrival on the monotonic clock the client shares, go back over IPC.
import fs from 'node:fs/promises';
import http from 'node:http';
import { HttpCall } from '../../src/http/context.ts';
import { Router } from '../../src/http/router.ts';
import { AuthService } from '../../src/pipeline/auth.ts';
import { RateLimitService } from '../../src/pipeline/rate-limit.ts';
import { ResponseLine } from '../../src/services/send/response-line.ts';
import { ResponseService } from '../../src/services/send/responses.ts';
import { FileStore } from '../../src/store/file/file-store.ts';
import { ResponseLog } from '../../src/store/file/response-log.ts';

let t0 = 0;
let marks: Record<string, number> | undefined;
const all: Array<Record<string, number>> = [];
/** Each marked request's request event, in nanoseconds of the monotonic clock (process.hrtime). */
const arrivals: string[] = [];

/** A step's time from the request event, the first time it is reached in the request marked. */
function mark(step: string): void {
  if (marks && !(step in marks)) marks[step] = performance.now() - t0;
}

/** Marks `before` as `name` is called and `after` as what it returns settles (or at once, if it is not a promise). */
function around(proto: object, name: string, before: string, after: string): void {
  const original = Reflect.get(proto, name) as (...a: unknown[]) => unknown;
  Reflect.set(proto, name, function (this: unknown, ...a: unknown[]) {
    mark(before);
    const out = Reflect.apply(original, this, a);
    if (out instanceof Promise) return out.finally(() => mark(after));
    mark(after);
    return out;
  });
}

const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (this: http.Server, event: string, ...a: unknown[]) {
  const req = a[0] as http.IncomingMessage | undefined;
  if (event === 'request' && /\/conversations\/conv_|\/sse-durable/.test(req?.url ?? '')) {
    t0 = performance.now();
    arrivals.push(String(process.hrtime.bigint()));
    marks = {};
  }
  return Reflect.apply(emit, this, [event, ...a]) as boolean;
} as typeof emit;

around(Router.prototype, 'match', 'routing', 'routed');
around(AuthService.prototype, 'authenticate', 'key checked ›', 'key checked ‹');
around(RateLimitService.prototype, 'take', 'rate counted ›', 'rate counted ‹');
around(HttpCall.prototype, 'json', 'stages passed, body read ›', 'body read ‹');
around(ResponseService.prototype, 'start', 'body parsed, conversation found: start ›', 'start ‹');
around(ResponseLine.prototype, 'enter', 'line entered ›', 'line entered ‹');
around(FileStore.prototype, 'readForReply', 'history read ›', 'history read ‹');
around(ResponseLog.prototype, 'begin', 'begin ›', 'begin ‹ (durable)');
// FileHandle's prototype, from a handle (node:fs does not export the class).
const opened = await fs.open(import.meta.filename, 'r');
await opened.close();
const handle = Object.getPrototypeOf(opened) as object;
around(handle, 'write', 'begin: write ›', 'begin: write ‹');
around(handle, 'datasync', 'begin: fdatasync ›', 'begin: fdatasync ‹');
const writeHead = http.ServerResponse.prototype.writeHead;
http.ServerResponse.prototype.writeHead = function (this: http.ServerResponse, ...a: unknown[]) {
  mark('writeHead');
  return Reflect.apply(writeHead, this, a) as http.ServerResponse;
} as typeof writeHead;
const write = http.ServerResponse.prototype.write;
http.ServerResponse.prototype.write = function (this: http.ServerResponse, ...a: unknown[]) {
  if (marks) {
    mark('first write');
    all.push(marks);
    marks = undefined;
  }
  return Reflect.apply(write, this, a) as boolean;
} as typeof write;

process.on('message', (m: { type?: string }) => {
  if (m?.type === 'reset') all.length = arrivals.length = 0;
  if (m?.type !== 'marks') return;
  const steps = new Map<string, number[]>();
  for (const r of all) for (const [k, v] of Object.entries(r)) steps.set(k, [...(steps.get(k) ?? []), v]);
  const median = (v: number[]) => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)]!;
  const rows = [...steps].map(([step, v]) => ({ step, ms: median(v), n: v.length })).sort((x, y) => x.ms - y.ms);
  process.send!({ type: 'marks', requests: all.length, rows, arrivals, firstWrites: all.map((r) => r['first write']!) });
});
