// The data port of `parley data export|import` (docs/data.md): one interface, two stores.
import { FilePort } from './file-port.ts';
import { PgPort } from './pg-port.ts';
import type { DataPort } from './format.ts';

export * from './format.ts';
export { FilePort, PgPort };
/** What opening a data directory that a running server holds throws (D-25). */
export { DirLockedError } from '../file/dir-lock.ts';

/** PostgreSQL when a database URL is given, else the file store of `dataDir` (opened: its LOCK taken). */
export async function openDataPort(where: { databaseUrl: string } | { dataDir: string }): Promise<DataPort> {
  return 'databaseUrl' in where ? PgPort.open(where.databaseUrl) : FilePort.open(where.dataDir);
}
