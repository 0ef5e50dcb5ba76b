// D-73: conversations as the team sees them on the admin surface (`/admin/v1`): deleted ones too,
// with what became of their history. The list's query is AdminConversationsQuery (admin.ts).
import { z } from 'zod';
import { Item, ReferenceConversation, ResponseError, Usage } from './resources.ts';

const nullableTime = z.number().int().nonnegative().nullable();

/**
 * D-73: a conversation's history as the team can read it: `live` (not deleted), `kept` (deleted, its
 * history kept until `history_purge_at`), or `purged` (deleted, its history and metadata removed at
 * `history_purged_at`; a conversation deleted before D-73 was purged as it was deleted).
 */
export const HistoryState = z.enum(['live', 'kept', 'purged']);

/** D-73: a row of the admin list: §3's conversation, its app, counts and deletion. */
export const AdminConversation = ReferenceConversation.extend({
  app_id: z.string(),
  message_count: z.number().int().nonnegative(),
  /** §3: a soft delete's time; null while live. */
  deleted_at: nullableTime,
  history: HistoryState,
  /** When a kept history's retention ends (deleted_at + the retention; the next sweep purges it); null unless `kept`. */
  history_purge_at: nullableTime,
  /** When the history was purged; null unless `purged`. */
  history_purged_at: nullableTime,
});

/** A response of the history as stored (D-17: a failed one with its error). */
export const AdminHistoryResponse = z.object({
  id: z.string(),
  object: z.literal('response'),
  created_at: z.number().int(),
  status: z.enum(['completed', 'failed']),
  error: ResponseError.nullable(),
  usage: Usage.nullable(),
});

/** D-73: one conversation with its full history: items and responses (both empty once purged). */
export const AdminConversationDetail = AdminConversation.extend({
  items: z.array(Item),
  responses: z.array(AdminHistoryResponse),
});

export type AdminConversationT = z.infer<typeof AdminConversation>;
export type AdminConversationDetailT = z.infer<typeof AdminConversationDetail>;
