// What the file store (file-store.ts) is opened with.
import type { ChangeEventsOf } from '../types.ts';

export interface FileStoreOptions {
  dataDir: string;
  /** Told when start-up drops a torn last journal line (see Journal.open). */
  warn?: (message: string) => void;
  /**
   * D-28: the journal is compacted once it is larger than `factor` × its live records plus `slackBytes`
   * (defaults 2 and 4 MiB; tests lower them).
   */
  compaction?: { factor?: number; slackBytes?: number };
  /** D-29: bytes of histories kept parsed in memory (default 64 MiB; tests lower it). */
  historyCacheBytes?: number;
  /** Tests: runs once a compaction has written its new file, before it takes the journal's place. */
  holdCompaction?: () => Promise<void>;
  /** Told when a compaction while running fails (the longer journal still holds everything). */
  onCompactionError?: (err: Error) => void;
  /** D-36: how long a response's events stay resumable after its end (default RESPONSE_EVENTS_TTL_MS). */
  responseEventsTtlMs?: number;
  /** D-87: webhook events older than this are not brought back from the journal at start-up (none given: all are). */
  webhookRetentionMs?: number;
  /** D-84: the events each change makes, asked of its outbox once it is open (default: none). */
  changeEvents?: ChangeEventsOf;
}
