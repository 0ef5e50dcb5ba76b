// The events Parley sends (docs/webhooks.md, D-83): made from the records of a change in the change's
// atomic step (the store asks, ChangeEvents), or by a service for what no store change records (a
// completion). An event is made only when an endpoint of its app wants its type, or a live listener
// (`parley webhooks listen`) follows the app; otherwise nothing is written.
import { unixNow } from '../../core/clock.ts';
import { newId } from '../../core/ids.ts';
import { type WebhookEventType, wants } from '../../core/webhook-endpoint.ts';
import type { ControlPlane } from '../../store/control.ts';
import type { ConversationRecord, ResponseSave } from '../../store/types.ts';
import type { ChangeEvents } from '../../store/types.ts';
import { type AppFollows, LocalFollows, type OutboxEvent } from '../../store/webhooks.ts';
import { toConversation } from '../conversations.ts';
import { outputOf, responseOf } from '../send/response-resource.ts';

/** D-83: a payload whose compact JSON is longer is sent with `data` as `{ id, object, url }`. */
export const MAX_PAYLOAD_BYTES = 20_480;

export class WebhookEvents implements ChangeEvents {
  constructor(
    private readonly control: Pick<ControlPlane, 'read'>,
    /** The public origin (`http://host:port`): the base of `url` in a payload cut short. */
    private readonly origin: () => string,
    /** D-88: the apps live listeners follow (on any instance: the store's outbox knows). */
    private readonly follows: AppFollows = new LocalFollows(),
  ) {}

  /** The apps with an endpoint, per version of the control document (read on every change of a conversation). */
  private readonly withEndpoints = new WeakMap<object, Set<string>>();

  wants(appId: string): boolean {
    if (this.follows.has(appId)) return true;
    const doc = this.control.read();
    let apps = this.withEndpoints.get(doc);
    if (!apps) {
      apps = new Set(doc.webhook_endpoints.map((e) => e.app_id));
      this.withEndpoints.set(doc, apps);
    }
    return apps.has(appId);
  }

  /** D-88: a listener follows `appId` until the returned function is called. */
  follow(appId: string): () => void {
    return this.follows.follow(appId);
  }

  /** The event of `type` about `data` (none when nobody wants it); `path` locates the resource under /v1/apps/{app}. */
  make(appId: string, type: WebhookEventType, data: { id: string; object: string }, path: string): OutboxEvent[] {
    const doc = this.control.read();
    const endpoints = doc.webhook_endpoints.filter((e) => e.app_id === appId && wants(e, type));
    if (endpoints.length === 0 && !this.follows.has(appId)) return [];
    const teamId = doc.apps.find((a) => a.id === appId)?.team_id;
    if (!teamId) return [];
    const id = newId('event');
    const created_at = unixNow();
    let body = JSON.stringify({ id, object: 'event', type, created_at, app_id: appId, data });
    if (Buffer.byteLength(body) > MAX_PAYLOAD_BYTES) {
      const url = `${this.origin()}/v1/apps/${appId}${path}`;
      body = JSON.stringify({ id, object: 'event', type, created_at, app_id: appId, data: { id: data.id, object: data.object, url } });
    }
    const deliveries = endpoints.map((e) => ({ endpoint_id: e.id, state: e.enabled ? ('pending' as const) : ('skipped' as const) }));
    return [{ id, team_id: teamId, app_id: appId, type, created_at, body, deliveries }];
  }

  created(r: ConversationRecord): OutboxEvent[] {
    return this.make(r.app_id, 'conversation.created', toConversation(r), `/conversations/${r.id}`);
  }

  updated(before: ConversationRecord, after: ConversationRecord): OutboxEvent[] {
    if (after.deleted_at !== null && before.deleted_at === null)
      return this.make(
        after.app_id,
        'conversation.deleted',
        { ...toConversation(before), deleted: true } as never,
        `/conversations/${after.id}`,
      );
    return this.make(after.app_id, 'conversation.updated', toConversation(after), `/conversations/${after.id}`);
  }

  restored(r: ConversationRecord): OutboxEvent[] {
    return this.make(r.app_id, 'conversation.restored', toConversation(r), `/conversations/${r.id}`);
  }

  /** An exchange saved: its response, and the conversation when its title or metadata changed with it. */
  saved(after: ConversationRecord, save: ResponseSave): OutboxEvent[] {
    const r = save.response;
    // D-83: the Response as the API answers it (send message, the look-up), items in §2.4's shape.
    const response = responseOf({ id: r.id, created_at: r.created_at, conversation_id: after.id }, outputOf(save.items, r.id), r);
    const type = r.status === 'completed' ? 'response.completed' : 'response.failed';
    return this.make(after.app_id, type, response, `/responses/${r.id}`);
  }
}
