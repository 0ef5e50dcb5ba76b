// `parley db migrate` / `parley db status`: the PostgreSQL schema (docs/postgres.md, D-41), explicitly.
// The server also migrates at start; these are for a deploy step that migrates before rolling out.
import { Command } from 'commander';
import { withDriver } from '../../src/store/pg/driver.ts';
import type { Session } from '../context.ts';
import { UsageError } from '../io.ts';
import { SETTINGS } from '../../src/settings.ts';

/** The URL from the flag, else DATABASE_URL, if any; checked by the server's own parser (src/settings.ts). */
export function databaseUrlFrom(session: Session, flag: string | undefined): string | undefined {
  const url = flag ?? (session.io.env.DATABASE_URL || undefined);
  if (url === undefined) return undefined;
  try {
    return SETTINGS.databaseUrl.parse(url, 'the database URL', session.io.env);
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
}

function databaseUrl(session: Session, flag: string | undefined): string {
  const url = databaseUrlFrom(session, flag);
  if (!url) throw new UsageError('no database: give --database-url or set DATABASE_URL (postgres://…)');
  return url;
}

async function withDatabase<T>(url: string, fn: (sql: import('postgres').Sql) => Promise<T>): Promise<T> {
  // Loaded on demand: the other commands need no database client, which may not be installed (D-151).
  const { default: postgres } = await withDriver(() => import('postgres'));
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    return await fn(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

export function dbCommand(session: Session): Command {
  const db = new Command('db')
    .description('the PostgreSQL schema: apply or list its migrations (docs/postgres.md)')
    .addHelpText(
      'after',
      '\nExamples:\n  DATABASE_URL=postgres://parley@db/parley parley db status\n  parley db migrate --database-url postgres://parley@db/parley\n',
    );
  db.command('migrate')
    .description('apply the pending migrations (safe while servers start: they take turns on a lock)')
    .option('--database-url <url>', 'postgres://… (env DATABASE_URL)')
    .addHelpText('after', '\nExample:\n  parley db migrate --database-url postgres://parley@db/parley\n')
    .action(async (opts: { databaseUrl?: string }) => {
      const { migrate } = await import('../../src/store/pg/migrate.ts');
      // D-41: another migrator (a starting server, another deploy step) holds the lock: say so, then wait.
      const onWait = () =>
        session.out.note('waiting for another migration to finish (a starting server or another `parley db migrate` holds the lock)…');
      const applied = await withDatabase(databaseUrl(session, opts.databaseUrl), (sql) => migrate(sql, undefined, { onWait }));
      session.out.line(applied.length === 0 ? 'up to date' : `applied ${applied.map((v) => `#${v}`).join(', ')}`);
    });
  db.command('status')
    .description('list the migrations applied and pending; exits 1 when some are pending')
    .option('--database-url <url>', 'postgres://… (env DATABASE_URL)')
    .addHelpText('after', '\nExample:\n  parley db status --database-url postgres://parley@db/parley\n')
    .action(async (opts: { databaseUrl?: string }) => {
      const { migrationStatus } = await import('../../src/store/pg/migrate.ts');
      const status = await withDatabase(databaseUrl(session, opts.databaseUrl), (sql) => migrationStatus(sql));
      for (const m of status.applied) session.out.line(`applied  #${m.version} ${m.name}  ${m.applied_at.toISOString()}`);
      for (const m of status.pending) session.out.line(`pending  #${m.version} ${m.name}`);
      if (status.pending.length > 0) session.exitCode = 1;
    });
  return db;
}
