// The rules of conversations (§4.1–4.5, D-7–D-14): create, list with cursors, read, rename, soft delete.
import type {
  ItemT,
  ConversationListT,
  ConversationT,
  ConversationWithItemsT,
  CreateConversationRequestT,
  DeletionResultT,
  ListConversationsQueryT,
  UpdateConversationRequestT,
} from '../contract/index.ts';
import { LIMITS } from '../contract/index.ts';
import { invalidRequest, notFound } from '../core/api-errors.ts';
import { JsonText } from '../core/answers.ts';
import type { ConversationRecord, NewConversation, Store } from '../store/types.ts';
import type { IdempotencyClaim } from '../core/claims.ts';
import type { SeedConversationT } from '../core/tenants.ts';
import { newId } from '../core/ids.ts';
import { unixNow } from '../core/clock.ts';
import type { StorageQuota } from './quota.ts';
import type { DeletedRetention } from './retention.ts';

export function toConversation(r: ConversationRecord): ConversationT {
  return {
    id: r.id,
    object: 'conversation',
    created_at: r.created_at,
    external_user_id: r.external_user_id,
    title: r.title,
    generated_title: r.generated_title,
    metadata: r.metadata,
  };
}

export class ConversationService {
  /**
   * The encoded body of a get, keyed by the store's items array (so it lives as long as the store
   * keeps that file cached, and a file read again is a new key). It is renewed when the file gains
   * items (the store only ever appends them, so the length changes) or the record is replaced (a
   * rename, an exchange: the store never changes a record in place). A conversation read again is
   * neither serialized nor encoded again.
   */
  private readonly bodies = new WeakMap<readonly unknown[], { length: number; record: ConversationRecord; body: Buffer }>();

  constructor(
    private readonly store: Store,
    /** D-27: the plans' storage quotas (none: unlimited, for tools and tests that build a service alone). */
    private readonly quota?: StorageQuota,
    /** D-73: deleted histories kept within their bound (none: kept until a sweep, for tools and tests). */
    private readonly retention?: DeletedRetention,
  ) {}

  /** `widget`: created by a widget visitor, within the widget's share of the storage quota (D-92). */
  async create(appId: string, body: CreateConversationRequestT, claim?: IdempotencyClaim, widget = false): Promise<ConversationT> {
    // No seq yet: the store gives the next as it creates (D-7), in the create's own step. The field
    // stands in its place, so that every record has its fields in one order (one shape for V8).
    const fresh: NewConversation = {
      id: newId('conversation'),
      app_id: appId,
      seq: undefined,
      created_at: unixNow(),
      external_user_id: body.external_user_id ?? null,
      title: body.title ?? null,
      generated_title: {},
      metadata: body.metadata ?? {},
      deleted_at: null,
      message_count: 0,
    };
    // About what its journal line takes (the quota counts records as stored, D-27); checked by the
    // store as it creates, so that creates at once (on any instance) never pass the quota together.
    const record = await this.store.putConversation(
      fresh,
      claim,
      this.quota?.admit(appId, 256 + Buffer.byteLength(JSON.stringify(fresh.metadata)), widget),
    );
    return toConversation(record);
  }

  /**
   * D-107: makes each conversation of the fixtures that the store lacks (a start on a new data
   * directory or database, or one from before it was listed). An instance that lost a race to make
   * one (PostgreSQL, several starting at once) finds it made.
   */
  async seed(seeds: readonly SeedConversationT[]): Promise<void> {
    for (const s of seeds) {
      if (await this.store.getConversation(s.id)) continue;
      const record: NewConversation = {
        ...s,
        seq: undefined, // the store gives the next as it creates (D-7), as for any create
        created_at: unixNow(),
        generated_title: {},
        deleted_at: null,
        message_count: 0,
      };
      await this.store.putConversation(record).catch(async (err: unknown) => {
        if (!(await this.store.getConversation(s.id))) throw err;
      });
    }
  }

  /** A live conversation of this app, or 404 (D-11: soft-deleted ones too; other apps' too). */
  async find(appId: string, id: string): Promise<ConversationRecord> {
    return live(appId, id, await this.store.getConversation(id));
  }

  async get(appId: string, id: string): Promise<ConversationWithItemsT> {
    const { record, items } = await this.read(appId, id);
    return { ...toConversation(record), items };
  }

  /** A live conversation of this app with its items (one read: on PostgreSQL one statement), or 404. */
  private async read(appId: string, id: string): Promise<{ record: ConversationRecord; items: ItemT[] }> {
    const found = await this.store.readConversation(id);
    const record = live(appId, id, found?.record);
    return { record, items: found!.items! };
  }

  /** `get` as the bytes of the response, kept while the conversation and its file are unchanged. */
  async getJson(appId: string, id: string): Promise<JsonText> {
    const { record, items } = await this.read(appId, id);
    let cached = this.bodies.get(items);
    if (!cached || cached.length !== items.length || cached.record !== record) {
      const head = JSON.stringify(toConversation(record));
      cached = { length: items.length, record, body: Buffer.from(`${head.slice(0, -1)},"items":${JSON.stringify(items)}}`) };
      this.bodies.set(items, cached);
    }
    return new JsonText(cached.body);
  }

  // A change is applied by the store in the conversation's turn, to the record as it is then: a
  // rename and a delete (or a new message) never start from the same record and undo each other.
  async update(appId: string, id: string, body: UpdateConversationRequestT): Promise<ConversationT> {
    return toConversation(live(appId, id, await this.store.renameConversation(appId, id, body.title)));
  }

  /** D-73 (revising D-27): the history is kept for the retention period, within the app's bound. */
  async delete(appId: string, id: string): Promise<DeletionResultT> {
    await this.store.updateConversation(id, (r) => ({ ...live(appId, id, r), deleted_at: unixNow() }));
    // The delete has landed: a failure to trim is left to the next sweep, which enforces the bound too.
    await this.retention?.afterDelete(appId).catch(() => {});
    return { id, object: 'conversation' as const, deleted: true as const };
  }

  /**
   * D-12: pages follow the requested order; `after` is the page that follows the cursor in that
   * order, `before` the page that precedes it (returned in that order too). `has_more` tells whether
   * more exist beyond the page in the direction of travel. Soft-deleted conversations are skipped
   * but stay valid cursors, so a walk never loses its place when its cursor is deleted.
   */
  async list(appId: string, q: ListConversationsQueryT): Promise<ConversationListT> {
    const limit = q.limit === undefined ? LIMITS.listLimitDefault : Number(q.limit);
    const order = q.order ?? 'desc';
    const cursorParam = q.after !== undefined ? 'after' : q.before !== undefined ? 'before' : null;
    // Walking up the creation order: asc (+after), desc+before; down: desc (+after), asc+before.
    const up = cursorParam === 'before' ? order === 'desc' : order === 'asc';
    const cursor = cursorParam === null ? undefined : (q.after ?? q.before)!;
    // The store reads one page only (PostgreSQL: keyset pagination), skipping soft-deleted ones.
    const page = await this.store.listConversations(appId, {
      externalUserId: q.external_user_id,
      direction: up ? 'up' : 'down',
      cursor,
      limit,
    });
    if (!page)
      throw invalidRequest(`${cursorParam} is not a conversation of this app: ${JSON.stringify(cursor)}.`, cursorParam!, 'invalid_cursor');
    if (cursorParam === 'before') page.records.reverse();
    const data = page.records.map(toConversation);
    return {
      object: 'list',
      data,
      first_id: data[0]?.id ?? null,
      last_id: data.at(-1)?.id ?? null,
      has_more: page.hasMore,
    };
  }
}

/** `r` if it is a live conversation of this app, else 404 (D-11: soft-deleted ones too; other apps' too). */
function live(appId: string, id: string, r: ConversationRecord | undefined): ConversationRecord {
  if (!r || r.app_id !== appId || r.deleted_at !== null) throw notFound(`Conversation ${JSON.stringify(id)}`, 'conversation_id');
  return r;
}
