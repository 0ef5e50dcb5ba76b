// The data port of `parley data export|import` (docs/data.md): one interface, two stores.
import { FilePort } from './file-port.ts';
import type { DataPort } from './format.ts';
import { withDriver } from '../pg/driver.ts';

export * from './format.ts';
export { FilePort };
/** What opening a data directory that a running server holds throws (D-25). */
export { DirLockedError } from '../file/dir-lock.ts';

/** PostgreSQL when a database URL is given, else the file store of `dataDir` (opened: its LOCK taken). */
export async function openDataPort(where: { databaseUrl: string } | { dataDir: string }): Promise<DataPort> {
  if (!('databaseUrl' in where)) return FilePort.open(where.dataDir);
  // D-151: the driver is loaded only for PostgreSQL, so that the file store's port runs without it.
  const { PgPort } = await withDriver(() => import('./pg-port.ts'));
  return PgPort.open(where.databaseUrl);
}
