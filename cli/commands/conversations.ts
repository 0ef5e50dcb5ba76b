// `parley conversations create|list|get|update|delete` (§4.1–4.5).
import { Command, Option } from 'commander';
import type { ListQuery } from '../client.ts';
import { inApp, type Session } from '../context.ts';
import { type DeletedListOptions, getWithDeleted, listWithDeleted, restoreDeleted } from './conversations-admin.ts';
import { canAsk, Prompter } from '../prompt.ts';
import { oneLine, parseMetadata, UsageError } from '../io.ts';
import { CONVERSATION_HEADER, conversationRows, conversationSummary, conversationWithHistory, table } from '../render.ts';

export function conversationsCommand(session: Session): Command {
  const out = session.out;
  const group = new Command('conversations')
    .alias('conv')
    .description('create, list, read, rename and delete conversations')
    .addHelpText('after', '\nExample:\n  parley conversations list --limit 5\n');

  group
    .command('create')
    .description('create a conversation (§4.1)')
    .option('--title <title>', 'custom title (otherwise one is generated after the first exchange)')
    .option('--external-user-id <id>', 'your own user identifier, to find the conversation again per user')
    .option('--metadata <json|@file>', 'context for the agent: a JSON object, or @file.json (@- for stdin)')
    .addHelpText(
      'after',
      `\nExample:\n  parley conversations create --title "Billing question" --external-user-id user_42 --metadata '{"plan":"pro"}'\n`,
    )
    .action(async (opts: { title?: string; externalUserId?: string; metadata?: string }, cmd: Command) => {
      const { client, g } = session.client(cmd);
      const metadata = await parseMetadata(opts.metadata, session.io.stdin);
      const res = await client.createConversation({ title: opts.title, external_user_id: opts.externalUserId, metadata });
      if (g.json) out.line(res.raw);
      else out.out(conversationSummary(res.data));
    });

  group
    .command('list')
    .alias('ls')
    .description('list conversations, newest first by default (§4.2)')
    .option('--limit <n>', 'page size, 1 to 100 (server default 20)')
    .option('--after <conversation_id>', 'the page after this conversation, in the chosen order')
    .option('--before <conversation_id>', 'the page before this conversation, in the chosen order')
    .addOption(new Option('--order <order>', 'by creation time').choices(['asc', 'desc']))
    .option('--external-user-id <id>', "only this user's conversations")
    .option('--all', 'follow the cursors to the end of the list (with --json: one page per line)')
    .option('--include-deleted', 'soft-deleted ones too, through the admin API (needs parley admin login, D-73)')
    .option('--only-deleted', 'only soft-deleted ones (admin API, as --include-deleted)')
    .addHelpText(
      'after',
      "\nExamples:\n  parley conversations list --order asc --limit 50\n  parley conversations list --all --external-user-id user_42 --json | jq -r '.data[].id'\n",
    )
    .action(async (opts: DeletedListOptions, cmd: Command) => {
      if (opts.includeDeleted || opts.onlyDeleted) return listWithDeleted(session, cmd, opts);
      const { client, g } = session.client(cmd);
      const query: ListQuery = {
        limit: opts.limit,
        after: opts.after,
        before: opts.before,
        order: opts.order,
        external_user_id: opts.externalUserId,
      };
      if (opts.all) {
        const rows: string[][] = [];
        for await (const page of client.listAllConversations(query)) {
          if (g.json) out.line(oneLine(page.raw));
          else rows.push(...conversationRows(page.data.data));
        }
        if (!g.json) out.out(rows.length > 0 ? table(rows, CONVERSATION_HEADER) : '(no conversations)\n');
        return;
      }
      const page = await client.listConversations(query);
      if (g.json) return out.line(page.raw);
      const list = page.data;
      out.out(list.data.length > 0 ? table(conversationRows(list.data), CONVERSATION_HEADER) : '(no conversations)\n');
      if (list.has_more) {
        // Another implementation may leave the cursors out: the page's own first and last ids are the same thing.
        const cursor =
          opts.before !== undefined ? `--before ${list.first_id ?? list.data[0]?.id}` : `--after ${list.last_id ?? list.data.at(-1)?.id}`;
        out.note(`more: add ${cursor} for the next page, or --all`);
      }
    });

  group
    .command('get')
    .alias('show')
    .argument('<conversation_id>')
    .description('show a conversation and its history (§4.3)')
    .option('--include-deleted', 'also a soft-deleted one, with its kept history, through the admin API (needs parley admin login, D-73)')
    .addHelpText('after', '\nExamples:\n  parley conversations get conv_abc123\n  parley conversations get conv_abc123 --include-deleted\n')
    .action(async (id: string, opts: { includeDeleted?: boolean }, cmd: Command) => {
      if (opts.includeDeleted) return getWithDeleted(session, cmd, id);
      const { client, g } = session.client(cmd);
      const res = await inApp(g, id, client.getConversation(id));
      if (g.json) out.line(res.raw);
      else out.out(conversationWithHistory(res.data));
    });

  group
    .command('update')
    .alias('rename')
    .argument('<conversation_id>')
    .description('set or clear the custom title (§4.4)')
    .option('--title <title>', 'the new custom title')
    .option('--clear-title', 'remove the custom title (title: null)')
    .addHelpText(
      'after',
      '\nExamples:\n  parley conversations update conv_abc123 --title "Refund for order 1234"\n  parley conversations update conv_abc123 --clear-title\n',
    )
    .action(async (id: string, opts: { title?: string; clearTitle?: boolean }, cmd: Command) => {
      if ((opts.title === undefined) === !opts.clearTitle) throw new UsageError('give exactly one of --title <title> or --clear-title');
      const { client, g } = session.client(cmd);
      const res = await inApp(g, id, client.updateConversation(id, { title: opts.clearTitle ? null : opts.title! }));
      if (g.json) out.line(res.raw);
      else out.out(conversationSummary(res.data));
    });

  group
    .command('delete')
    .alias('rm')
    .argument('<conversation_id>')
    .description('soft-delete a conversation (§4.5); asks first on a terminal')
    .option('-y, --yes', 'do not ask for confirmation')
    .addHelpText(
      'after',
      '\nWithout a terminal (a script, a pipe) it never asks.\n\nExample:\n  parley conversations delete conv_abc123 --yes\n',
    )
    .action(async (id: string, opts: { yes?: boolean }, cmd: Command) => {
      const { client, g } = session.client(cmd);
      // D-64: a person at a terminal confirms; a script is never stopped by a question.
      if (!opts.yes && canAsk(session.io)) {
        // Nothing to confirm for a conversation that is not there: its 404 comes before the question.
        await inApp(g, id, client.getConversation(id));
        const prompter = new Prompter(session.io.stdin, session.io.stderr);
        let answer: string;
        try {
          // D-73: the API cannot undo a delete; a team admin can restore it while its history is kept.
          answer = await prompter.ask(`Delete ${id}? Only a team admin can restore it, until its history is purged. [y/N] `);
        } finally {
          prompter.close();
        }
        if (!/^y(es)?$/i.test(answer)) {
          out.note(`kept ${id}`);
          return;
        }
      }
      const res = await inApp(g, id, client.deleteConversation(id));
      if (g.json) out.line(res.raw);
      else out.line(`deleted ${res.data.id}`);
    });

  group
    .command('restore')
    .argument('<conversation_id>')
    .description('restore a soft-deleted conversation while its history is kept (D-73; a team admin, through parley admin login)')
    .addHelpText('after', '\nExample:\n  parley conversations list --only-deleted\n  parley conversations restore conv_abc123\n')
    .action(async (id: string, _opts: unknown, cmd: Command) => restoreDeleted(session, cmd, id));

  return group;
}
