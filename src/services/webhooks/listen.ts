// D-88: the live stream `parley webhooks listen` follows: each event of an app, whichever instance
// recorded it (the outbox tells those of the others, src/store/pg/webhook-follows.ts), with the
// `webhook-*` headers a delivery would carry (signed as one, D-80), as SSE events
// `webhook.event {event_id, type, headers, body}`. Live only: nothing is retried or recorded, and while
// a listener follows an app its events are made even with no endpoint (D-83).
import type { UnsequencedEvent } from '../../contract/index.ts';
import { signedHeaders } from '../../core/webhook-signature.ts';
import type { AdminCaller } from '../../core/callers.ts';
import { EventStream } from '../../core/answers.ts';
import type { ControlPlane } from '../../store/control.ts';
import type { OutboxEvent, WebhookOutbox } from '../../store/webhooks.ts';
import type { WebhookEvents } from './events.ts';
import { chosenSigningKey } from './signing-keys.ts';
import { endpointSigningKeys } from '../../core/endpoint-signing.ts';
import { teamApp } from '../admin/team.ts';

/** What the live stream reads. */
export interface ListenSource {
  outbox: WebhookOutbox;
  events: WebhookEvents;
  control: ControlPlane;
  /** Aborted when Parley starts closing: every live stream ends. */
  closing: AbortSignal;
}

/**
 * The live stream of an app of the caller's team (another team's is 404 before anything is sent,
 * D-65); it ends with its request or when Parley starts closing.
 */
export function listen(o: ListenSource, c: AdminCaller, q: { app_id: string; signing_key_id?: string }, request: AbortSignal): EventStream {
  teamApp(o.control.read(), c, q.app_id);
  // D-150: signed as an endpoint registered for that key would be (the same default).
  const key = chosenSigningKey(o.control.read(), c, q.signing_key_id, Math.floor(Date.now() / 1000)).id;
  return new EventStream(liveEvents(o, c.team_id, q.app_id, key, AbortSignal.any([request, o.closing])), () => ({ saved: true }));
}

export async function* liveEvents(
  o: { outbox: WebhookOutbox; events: WebhookEvents; control: ControlPlane },
  teamId: string,
  appId: string,
  signingKeyId: string,
  signal: AbortSignal,
): AsyncGenerator<UnsequencedEvent> {
  const queue: OutboxEvent[] = [];
  let wake: (() => void) | undefined;
  const unfollow = o.events.follow(appId);
  const stop = o.outbox.onEvents((events) => {
    for (const e of events) if (e.app_id === appId && e.team_id === teamId) queue.push(e);
    wake?.();
  });
  const onAbort = () => wake?.();
  signal.addEventListener('abort', onAbort);
  try {
    // The first event says the stream is live (the CLI prints "Ready").
    yield { event: 'webhook.listening', data: { app_id: appId } } as unknown as UnsequencedEvent;
    while (!signal.aborted) {
      const ev = queue.shift();
      if (!ev) {
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
        continue;
      }
      const now = Math.floor(Date.now() / 1000);
      const keys = endpointSigningKeys(o.control.read().keys, teamId, signingKeyId, now);
      // D-150: once the key no longer signs, the stream ends rather than send what nobody verifies.
      if (keys.length === 0) return;
      const headers = signedHeaders(keys, ev.id, now, ev.body);
      yield {
        event: 'webhook.event',
        data: { event_id: ev.id, event_type: ev.type, headers, body: ev.body },
      } as unknown as UnsequencedEvent;
    }
  } finally {
    signal.removeEventListener('abort', onAbort);
    stop();
    unfollow();
  }
}
