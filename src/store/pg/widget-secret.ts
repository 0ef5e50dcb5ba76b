// D-49's signing secret of visitor tokens on PostgreSQL, when no PARLEY_WIDGET_SECRET is set: made by the
// first instance and read by every other, so that a visitor token issued by one instance is taken by all
// of them. The file backend's twin is src/store/file/widget-secret.ts.
import { randomBytes } from 'node:crypto';
import type { Sql } from 'postgres';

export async function pgWidgetSecret(sql: Sql): Promise<Buffer> {
  await sql`INSERT INTO settings (name, value) VALUES ('widget_secret', ${randomBytes(32).toString('hex')}) ON CONFLICT (name) DO NOTHING`;
  const [row] = await sql<{ value: string }[]>`SELECT value FROM settings WHERE name = 'widget_secret'`;
  return Buffer.from(row!.value, 'utf8');
}
