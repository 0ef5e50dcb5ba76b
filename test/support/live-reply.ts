// Helpers of the PostgreSQL fault tests (test/pg-faults.test.ts, test/proof/pg-restart.test.ts): a
// streamed reply whose events are collected as they come, a condition polled until it holds, and the
// liveness locks of a database (D-90).
import assert from 'node:assert/strict';
import { createParser } from 'eventsource-parser';
import type postgres from 'postgres';
import { KEY } from './helpers.ts';

/** A test fails only on a request still unanswered after this (D-91's bound is 1 s here). */
export const UNANSWERED_MS = 30_000;
/** How long a condition polled for may take to come true before the test fails. */
const WITHIN_MS = 30_000;

/** Polls `condition` every 100 ms until it holds; fails with `what` past WITHIN_MS. */
export async function until(what: string, condition: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + WITHIN_MS;
  while (!(await condition())) {
    if (Date.now() > end) assert.fail(`not within ${WITHIN_MS / 1000} s: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface Sse {
  events: { event: string; data: any }[];
  /** Resolves once an event satisfies `pred`. */
  next(pred: (e: { event: string; data: any }) => boolean): Promise<void>;
  /** Resolves once the stream ended. */
  done: Promise<void>;
}

/** A send message as a stream, its events collected as they come. */
export async function send(base: string, appId: string, conversationId: string, content: string): Promise<Sse> {
  const res = await fetch(`${base}/apps/${appId}/conversations/${conversationId}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ message: { content }, stream: true }),
  });
  assert.equal(res.status, 200);
  const events: Sse['events'] = [];
  const waiting = new Set<() => void>();
  const parser = createParser({
    onEvent: (e) => {
      events.push({ event: e.event ?? 'message', data: JSON.parse(e.data) });
      for (const f of waiting) f();
    },
  });
  const decoder = new TextDecoder();
  const done = (async () => {
    for await (const chunk of res.body!) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
  })();
  const next = (pred: (e: { event: string; data: any }) => boolean) =>
    new Promise<void>((resolve, reject) => {
      const look = () => {
        if (events.some(pred)) {
          waiting.delete(look);
          resolve();
        }
      };
      waiting.add(look);
      look();
      done
        .then(look, reject)
        .then(() => waiting.has(look) && reject(new Error(`the stream ended first: ${JSON.stringify(events.at(-1))}`)));
    });
  return { events, next, done };
}

/**
 * Session advisory locks held in `db` by idle sessions: the instances' liveness locks (D-90), not the
 * transaction-scoped ones of a D-23 count under way.
 */
export async function livenessLocks(sql: postgres.Sql, db: string): Promise<number> {
  const [row] = await sql<{ n: string }[]>`
    SELECT count(*) AS n FROM pg_locks l JOIN pg_database d ON d.oid = l.database JOIN pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND d.datname = ${db} AND a.state = 'idle'`;
  return Number(row!.n);
}
