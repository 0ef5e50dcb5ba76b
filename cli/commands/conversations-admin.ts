// `parley conversations list|get --include-deleted` (D-79 over D-73): conversations as the team sees
// them, soft-deleted ones too, through the admin surface and the admin login rather than the API key.
import type { Command } from 'commander';
import { AdminConversation, AdminConversationDetail, type AdminConversationT } from '../../src/contract/admin-conversations.ts';
import { listOf } from '../../src/contract/admin.ts';
import { adminClient, noteMore, show } from '../admin.ts';
import type { ConversationWithItems } from '../client.ts';
import type { Session } from '../context.ts';
import { oneLine, UsageError } from '../io.ts';
import { ago, conversationRows, conversationWithHistory, table, time } from '../render.ts';

const HEADER = ['ID', 'CREATED', 'USER', 'MESSAGES', 'DELETED', 'TITLE'];

export interface DeletedListOptions {
  limit?: string;
  after?: string;
  before?: string;
  order?: 'asc' | 'desc';
  externalUserId?: string;
  includeDeleted?: boolean;
  onlyDeleted?: boolean;
  all?: boolean;
}

/** D-73: what became of a conversation's history, in words. */
function historyState(c: AdminConversationT): string {
  if (c.deleted_at === null) return '-';
  if (c.history === 'purged') return `${ago(c.deleted_at)}, purged`;
  return `${ago(c.deleted_at)}, kept`;
}

function rows(list: AdminConversationT[]): string[][] {
  // The data plane's columns, then what only the team sees: the count and the deletion.
  return conversationRows(list).map(([id, created, user, title], i) => [
    id!,
    created!,
    user!,
    String(list[i]!.message_count),
    historyState(list[i]!),
    title!,
  ]);
}

/** The active app, as the data-plane commands require it. */
function appOf(session: Session, cmd: Command): string {
  const g = session.globals(cmd);
  if (!g.app) throw new UsageError('no app: run parley login, pass --app or set PARLEY_APP_ID');
  return g.app;
}

export async function listWithDeleted(session: Session, cmd: Command, opts: DeletedListOptions): Promise<void> {
  if (opts.includeDeleted && opts.onlyDeleted) throw new UsageError('give one of --include-deleted or --only-deleted');
  const app = appOf(session, cmd);
  const { admin, g } = adminClient(session, cmd);
  const path = `/apps/${encodeURIComponent(app)}/conversations`;
  const query = {
    deleted: opts.onlyDeleted ? 'only' : 'include',
    limit: opts.limit,
    after: opts.after,
    before: opts.before,
    order: opts.order,
    external_user_id: opts.externalUserId,
  };
  if (!opts.all) {
    const res = await admin.get(path, listOf(AdminConversation), query);
    show(session, g, res, () => (res.data.data.length > 0 ? table(rows(res.data.data), HEADER) : '(no conversations)\n'));
    if (!g.json) noteMore(session, res.data);
    return;
  }
  const all: AdminConversationT[] = [];
  for (let q = query; ; ) {
    const page = await admin.get(path, listOf(AdminConversation), q);
    if (g.json) session.out.line(oneLine(page.raw));
    else all.push(...page.data.data);
    if (!page.data.has_more || !page.data.last_id) break;
    q = { ...q, after: page.data.last_id };
  }
  if (!g.json) session.out.out(all.length > 0 ? table(rows(all), HEADER) : '(no conversations)\n');
}

export async function getWithDeleted(session: Session, cmd: Command, id: string): Promise<void> {
  const app = appOf(session, cmd);
  const { admin, g } = adminClient(session, cmd);
  const res = await admin.get(`/apps/${encodeURIComponent(app)}/conversations/${encodeURIComponent(id)}`, AdminConversationDetail);
  show(session, g, res, () => {
    const c = res.data;
    const deleted =
      c.deleted_at === null
        ? ''
        : c.history === 'purged'
          ? `deleted: ${time(c.deleted_at)}; its history was purged${c.history_purged_at ? ` ${time(c.history_purged_at)}` : ''}\n`
          : `deleted: ${time(c.deleted_at)}; its history is kept until ${time(c.history_purge_at ?? undefined)}\n`;
    return conversationWithHistory(c as unknown as ConversationWithItems).replace(/\n\n/, `\n${deleted}\n`);
  });
}

/** D-73: a team admin restores a soft-deleted conversation while its history is kept. */
export async function restoreDeleted(session: Session, cmd: Command, id: string): Promise<void> {
  const app = appOf(session, cmd);
  const { admin, g } = adminClient(session, cmd);
  const path = `/apps/${encodeURIComponent(app)}/conversations/${encodeURIComponent(id)}/restore`;
  const res = await admin.post(path, AdminConversationDetail, {});
  show(session, g, res, () => `restored ${res.data.id} (${res.data.items.length} items)\n`);
}
