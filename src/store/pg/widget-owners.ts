// D-48's owners on PostgreSQL (docs/postgres.md): which visitor owns which widget conversation, one row
// each, so that a visitor reaches their conversations through any instance.
import type { Sql } from 'postgres';
import type { WidgetOwners } from '../shared.ts';

export class PgWidgetOwners implements WidgetOwners {
  constructor(private readonly sql: Sql) {}

  async claim(conversationId: string, visitorId: string): Promise<void> {
    // As the file journal's last line wins (a new conversation is claimed once).
    await this.sql`INSERT INTO widget_owners (conversation_id, visitor_id) VALUES (${conversationId}, ${visitorId})
                   ON CONFLICT (conversation_id) DO UPDATE SET visitor_id = EXCLUDED.visitor_id`;
  }

  async ownerOf(conversationId: string): Promise<string | undefined> {
    const [row] = await this.sql<{ visitor_id: string }[]>`SELECT visitor_id FROM widget_owners WHERE conversation_id = ${conversationId}`;
    return row?.visitor_id;
  }

  async close(): Promise<void> {}
}
