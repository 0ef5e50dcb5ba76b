// `parley data export` / `parley data import`: move every app's conversations, their histories and
// usage between stores as NDJSON (docs/data.md). The store layer does the work (src/store/port/); this
// file picks the store, streams lines to and from files, and reports.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { pipeline } from 'node:stream/promises';
import { Command } from 'commander';
import type { Session } from '../context.ts';
import { UsageError } from '../io.ts';
import { databaseUrlFrom } from './db.ts';
import { defaultDataDir, fixturesDirOf } from './serve.ts';

interface StoreOptions {
  dataDir?: string;
  databaseUrl?: string;
  fixtures?: string;
}

const FIXTURES_HELP = "the store's teams and apps, as parley serve reads them (env FIXTURES, default ./fixtures, else the package's own)";

/** D-94: the apps of the store's fixtures, id → team id: an export names them, an import checks against them. */
async function appsOf(session: Session, opts: StoreOptions): Promise<Map<string, string>> {
  const { loadTenants } = await import('../../src/store/fixtures.ts');
  const tenants = await loadTenants(fixturesDirOf(session, opts.fixtures));
  return new Map([...tenants.apps.values()].map((a) => [a.id, a.team_id]));
}

type Where = { databaseUrl: string; label: string } | { dataDir: string; label: string };

/**
 * Which store: flags first (--database-url, else --data-dir), then DATABASE_URL, then DATA_DIR, then the
 * default `parley serve` uses. A flag wins over the environment, so `--data-dir` works with DATABASE_URL exported.
 */
function storeOf(session: Session, opts: StoreOptions): Where {
  if (opts.databaseUrl !== undefined && opts.dataDir !== undefined) throw new UsageError('give --database-url or --data-dir, not both');
  if (opts.dataDir !== undefined) return { dataDir: opts.dataDir, label: path.resolve(opts.dataDir) };
  const url = databaseUrlFrom(session, opts.databaseUrl);
  if (url !== undefined) return { databaseUrl: url, label: 'the database' };
  if (session.io.env.DATA_DIR) return { dataDir: session.io.env.DATA_DIR, label: path.resolve(session.io.env.DATA_DIR) };
  const { dir, note } = defaultDataDir(process.cwd(), session.io.env);
  if (note) session.out.note(note);
  const dataDir = dir ?? './data';
  return { dataDir, label: path.resolve(dataDir) };
}

async function open(where: Where, verb: string) {
  // Loaded on demand: the other commands need none of the store's modules.
  const { openDataPort, DirLockedError } = await import('../../src/store/port/index.ts');
  try {
    return await openDataPort(where);
  } catch (err) {
    // The file store is read and written by one process at a time (D-25).
    if (err instanceof DirLockedError)
      throw new Error(
        `cannot ${verb} ${where.label}: a running Parley serves it (pid ${err.pid}); stop that server first (the file store is exported and imported while no server runs on it)`,
      );
    throw err;
  }
}

/** Writes a line, waiting while the stream's buffer is full; stops if the reader went away. */
async function writeLine(stream: NodeJS.WritableStream, line: string, closed: AbortSignal): Promise<void> {
  if (stream.write(`${line}\n`)) return;
  await once(stream, 'drain', { signal: closed }).catch(() => {});
}

const counted = (c: { conversations: number; items: number; responses: number; usage: number; control?: number; audit?: number }) =>
  `${c.conversations} conversation${c.conversations === 1 ? '' : 's'} (${c.items} item${c.items === 1 ? '' : 's'}, ${c.responses} response${c.responses === 1 ? '' : 's'}) and ${c.usage} usage entr${c.usage === 1 ? 'y' : 'ies'}${controlCounted(c)}`;

/** Export version 2: the control plane and the audit log, when the file holds them. */
const controlCounted = (c: { control?: number; audit?: number }) =>
  c.control || c.audit ? `, ${c.control ? 'the control plane and ' : ''}${c.audit} audit entr${c.audit === 1 ? 'y' : 'ies'}` : '';

/** The lines of `file`, read again from its start at every call. */
const linesOf = (file: string) => () => readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });

export function dataCommand(session: Session): Command {
  const data = new Command('data')
    .description("export every app's conversations, histories and usage as NDJSON, or import such a file (docs/data.md)")
    .addHelpText(
      'after',
      '\nThe store: --database-url (env DATABASE_URL) for PostgreSQL, else --data-dir (env DATA_DIR; the default of parley serve).\nA data directory must not be served meanwhile; a database may be.\n\nExamples:\n  parley data export --data-dir ./data --output parley.ndjson\n  parley data import parley.ndjson --database-url postgres://parley@db/parley\n  parley data export --data-dir ./data | parley data import - --database-url postgres://parley@db/parley\n',
    );
  data
    .command('export')
    .description('write every conversation (deleted ones too), its items and responses, and the usage entries, one JSON object per line')
    .option('--output <file>', 'write to this file (replaced once the export is whole) instead of stdout')
    .option('--data-dir <dir>', 'the file store (env DATA_DIR; default ./data in a checkout, else ~/.local/share/parley)')
    .option('--database-url <url>', 'postgres://… (env DATABASE_URL)')
    .option('--fixtures <dir>', FIXTURES_HELP)
    .addHelpText(
      'after',
      '\nExamples:\n  parley data export --output parley.ndjson\n  parley data export --database-url postgres://parley@db/parley | gzip > parley.ndjson.gz\n',
    )
    .action(async (opts: StoreOptions & { output?: string }) => {
      const where = storeOf(session, opts);
      // An export reads: a data directory that does not exist is a mistake, not an empty store.
      if ('dataDir' in where && !fs.existsSync(where.dataDir)) throw new UsageError(`${where.label}: no such data directory`);
      const tmp = opts.output === undefined ? undefined : `${opts.output}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
      let target: NodeJS.WritableStream = session.io.stdout;
      let file: fs.WriteStream | undefined;
      if (tmp !== undefined) {
        // Export v2 holds the control plane's hashes and signing secrets (docs/data.md): owner-only, as the data directory.
        file = fs.createWriteStream(tmp, { flags: 'wx', mode: 0o600 });
        try {
          await once(file, 'open');
        } catch (err) {
          throw new UsageError(`--output: cannot write ${opts.output}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        }
        target = file;
      }
      const apps = await appsOf(session, opts);
      const port = await open(where, 'export');
      try {
        const lines = port.export(apps);
        let next = await lines.next();
        // Raw bytes, not session.out: the data is written exactly (never redacted or re-wrapped).
        while (!next.done && !session.out.closed) {
          await writeLine(target, next.value, session.out.closedSignal);
          next = await lines.next();
        }
        if (!next.done) {
          await lines.return(undefined as never);
          return;
        }
        if (file && tmp) {
          file.end();
          await once(file, 'finish');
          const fd = await fs.promises.open(tmp, 'r');
          await fd.sync();
          await fd.close();
          await fs.promises.rename(tmp, opts.output!);
        }
        session.out.note(`exported ${counted(next.value)} from ${where.label}`);
      } finally {
        await port.close();
        if (tmp !== undefined) {
          file?.destroy();
          await fs.promises.rm(tmp, { force: true });
        }
      }
    });
  data
    .command('import')
    .description('load an export into the store: all or nothing, into an empty store or one without those ids (a clash names the id)')
    .argument('<file>', 'the export, or - for stdin')
    .option('--data-dir <dir>', 'the file store (env DATA_DIR; default ./data in a checkout, else ~/.local/share/parley)')
    .option('--database-url <url>', 'postgres://… (env DATABASE_URL)')
    .option('--fixtures <dir>', FIXTURES_HELP)
    .addHelpText(
      'after',
      '\nExamples:\n  parley data import parley.ndjson --data-dir ./data-new\n  gunzip -c parley.ndjson.gz | parley data import - --database-url postgres://parley@db/parley\n',
    )
    .action(async (file: string, opts: StoreOptions) => {
      const where = storeOf(session, opts);
      let source = file;
      let spooled: string | undefined;
      if (file === '-') {
        if (session.io.stdin.isTTY) throw new UsageError('import -: pipe the export on stdin (or give its file)');
        // The file store reads an import twice (check, then write): stdin is kept in a temporary file.
        spooled = path.join(os.tmpdir(), `parley-import-${process.pid}-${randomBytes(4).toString('hex')}.ndjson`);
        await pipeline(session.io.stdin, fs.createWriteStream(spooled, { flags: 'wx', mode: 0o600 }));
        source = spooled;
      } else {
        try {
          await fs.promises.access(file, fs.constants.R_OK);
          if ((await fs.promises.stat(file)).isDirectory()) throw Object.assign(new Error(), { code: 'EISDIR' });
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          throw new UsageError(
            `cannot read ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : code === 'EACCES' ? 'permission denied' : code}`,
          );
        }
      }
      try {
        const { ImportError } = await import('../../src/store/port/format.ts');
        const apps = await appsOf(session, opts);
        const port = await open(where, 'import into');
        try {
          const counts = await port.import(linesOf(source), apps);
          session.out.note(`imported ${counted(counts)} into ${where.label}`);
        } catch (err) {
          if (err instanceof ImportError) throw new Error(`${file === '-' ? 'stdin' : file}: ${err.message}`);
          throw err;
        } finally {
          await port.close();
        }
      } finally {
        if (spooled) await fs.promises.rm(spooled, { force: true });
      }
    });
  return data;
}
