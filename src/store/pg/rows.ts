// A conversation's row as PostgreSQL returns it (bigint columns as strings, JSON kept as text, D-40),
// and the record it is: one reading for the store and the export.
import type { ConversationRecord } from '../types.ts';

export interface ConversationRow {
  id: string;
  app_id: string;
  seq: string;
  created_at: string;
  external_user_id: string | null;
  title: string | null;
  generated_title: string;
  metadata: string;
  deleted_at: string | null;
  message_count: number;
  history_bytes: string;
}

export function recordOf(r: ConversationRow): ConversationRecord {
  return {
    id: r.id,
    app_id: r.app_id,
    seq: Number(r.seq),
    created_at: Number(r.created_at),
    external_user_id: r.external_user_id,
    title: r.title,
    generated_title: JSON.parse(r.generated_title) as Record<string, string>,
    metadata: JSON.parse(r.metadata) as Record<string, unknown>,
    deleted_at: r.deleted_at === null ? null : Number(r.deleted_at),
    message_count: r.message_count,
  };
}
