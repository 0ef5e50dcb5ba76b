// D-73: an app's conversations as its team sees them on the admin surface: listed and read deleted or
// not, with their full history and responses while it is kept, and restored by an admin while it is
// kept (audited). Only the caller's team's apps: another team's app or conversation is 404 (D-65).
import type { AdminConversationDetailT, AdminConversationT } from '../../contract/admin-conversations.ts';
import type { z } from 'zod';
import { type AdminConversationsQuery, listPage } from '../../contract/admin.ts';
import { LIMITS } from '../../contract/index.ts';
import type { AdminCaller } from '../../core/callers.ts';
import { apiError, invalidRequest, notFound } from '../../core/api-errors.ts';
import type { ControlPlane } from '../../store/control.ts';
import type { AdminRecord, Store } from '../../store/types.ts';
import { toConversation } from '../conversations.ts';
import type { DeletedRetention } from '../retention.ts';
import { actorOf, auditOf, type Origin } from './accounts.ts';
import { teamApp } from './team.ts';

type Query = z.infer<typeof AdminConversationsQuery>;

export class AdminConversationService {
  constructor(
    private readonly store: Pick<Store, 'admin' | 'readHistory'>,
    private readonly control: ControlPlane,
    private readonly retention: Pick<DeletedRetention, 'purgeAt'>,
  ) {}

  /** §4.2's list shape over the app's conversations, deleted ones as `deleted` says (default exclude). */
  async list(c: AdminCaller, appId: string, q: Query) {
    this.appOf(c, appId);
    if (q.after !== undefined && q.before !== undefined)
      throw invalidRequest('after and before cannot be used together.', 'before', 'invalid_value');
    const order = q.order ?? 'desc';
    const cursorParam = q.after !== undefined ? 'after' : q.before !== undefined ? 'before' : null;
    // As the data plane's list (D-12): `before` walks against the order, and its page is turned back.
    const up = cursorParam === 'before' ? order === 'desc' : order === 'asc';
    const cursor = q.after ?? q.before;
    const page = await this.store.admin.page(appId, {
      direction: up ? 'up' : 'down',
      cursor,
      limit: q.limit ?? LIMITS.listLimitDefault,
      externalUserId: q.external_user_id,
      deleted: q.deleted ?? 'exclude',
      text: q.q,
    });
    if (!page)
      throw invalidRequest(`${cursorParam} is not a conversation of this app: ${JSON.stringify(cursor)}.`, cursorParam, 'invalid_cursor');
    if (cursorParam === 'before') page.records.reverse();
    const data = page.records.map((r) => this.view(r));
    return listPage(data, page.hasMore);
  }

  /** One conversation, deleted or not, with its history (empty, and `history: "purged"`, once purged). */
  async get(c: AdminCaller, appId: string, id: string): Promise<AdminConversationDetailT> {
    const r = await this.find(c, appId, id);
    const h = r.purgedAt === null ? await this.store.readHistory(id) : { items: [], responses: [] };
    return {
      ...this.view(r),
      items: h.items,
      responses: h.responses.map((x) => ({
        id: x.id,
        object: 'response' as const,
        created_at: x.created_at,
        status: x.status,
        error: x.error ?? null,
        usage: x.usage ?? null,
      })),
    };
  }

  /** D-73: an admin restores a deleted conversation while its history is kept; audited as `conversation.restored`. */
  async restore(c: AdminCaller, appId: string, id: string, origin: Origin): Promise<AdminConversationDetailT> {
    const before = await this.find(c, appId, id);
    const result = await this.store.admin.restore(id);
    if ('refused' in result) {
      if (result.refused === 'missing') throw notFound(`Conversation ${JSON.stringify(id)}`, 'conversation_id');
      throw apiError(
        'conversation_not_restorable',
        result.refused === 'live'
          ? `Conversation ${JSON.stringify(id)} is not deleted: there is nothing to restore.`
          : `Conversation ${JSON.stringify(id)} cannot be restored: its history was purged after its retention period.`,
        { param: 'conversation_id' },
      );
    }
    await this.control.audit.append([
      auditOf(
        origin,
        c.team_id,
        'conversation.restored',
        actorOf(c),
        { type: 'conversation', id },
        { deleted_at: [before.record.deleted_at, null] },
      ),
    ]);
    return this.get(c, appId, id);
  }

  /** The caller's team's conversation of that app (deleted too), or 404. */
  private async find(c: AdminCaller, appId: string, id: string): Promise<AdminRecord> {
    this.appOf(c, appId);
    const r = await this.store.admin.get(id);
    if (!r || r.record.app_id !== appId) throw notFound(`Conversation ${JSON.stringify(id)}`, 'conversation_id');
    return r;
  }

  /** D-65: an app of the caller's team, or 404 as if it did not exist. */
  private appOf(c: AdminCaller, appId: string): void {
    teamApp(this.control.read(), c, appId);
  }

  private view(r: AdminRecord): AdminConversationT {
    const { record } = r;
    const deleted = record.deleted_at;
    const history = deleted === null ? 'live' : r.purgedAt === null ? 'kept' : 'purged';
    return {
      ...toConversation(record),
      // D-73: a purged conversation's metadata went with its history.
      metadata: history === 'purged' ? {} : record.metadata,
      app_id: record.app_id,
      message_count: record.message_count,
      deleted_at: deleted,
      history,
      history_purge_at: history === 'kept' ? this.retention.purgeAt(deleted!) : null,
      history_purged_at: r.purgedAt,
    };
  }
}
