// What the PostgreSQL store (pg-store.ts) is opened with.
import type { ChangeEventsOf } from '../types.ts';

export interface PgStoreOptions {
  /** postgres://user:password@host:port/database */
  url: string;
  /** Connections in the pool (the settings' DATABASE_POOL_SIZE; none given: the driver's own). */
  max?: number;
  /** D-36: how long a response's events stay resumable after its end. */
  responseEventsTtlMs?: number;
  /** D-93: how long the look-up still finds a response after its end (tests shorten it). */
  responseRetentionMs?: number;
  warn?: (message: string) => void;
  /** D-84: the events each change makes, asked of its outbox (default: none). */
  changeEvents?: ChangeEventsOf;
}
