// D-73 (revising D-27): a soft-deleted conversation's history is kept for the retention period
// (`--deleted-retention-days`, default 30), outside the storage quota, then purged. Bounded per app:
// its kept histories hold at most its plan's storage quota, the oldest deletions purged first once a
// delete passes it, so that an app's conversations take at most twice its quota on disk. The sweep
// runs at start and every 10 minutes, on every instance (the stores purge each conversation once).
import { unixNow } from '../core/clock.ts';
import { Periodic } from '../core/periodic.ts';
import type { Store } from '../store/types.ts';
import type { StorageQuota } from './quota.ts';

export const DEFAULT_DELETED_RETENTION_DAYS = 30;
export const DELETED_SWEEP_MS = 10 * 60_000;

export class DeletedRetention {
  private sweeps: Periodic | undefined;

  constructor(
    private readonly store: Pick<Store, 'admin'>,
    private readonly quota: Pick<StorageQuota, 'bytes'>,
    /** Days a deleted conversation's history is kept (0: purged as it is deleted). */
    readonly days: number,
    /** The apps whose bound the sweep checks. */
    private readonly apps: () => Iterable<string>,
    private readonly now: () => number = unixNow,
  ) {}

  /** When the retention of a history deleted at `deletedAt` ends (the next sweep purges it, or a bound earlier). */
  purgeAt(deletedAt: number): number {
    return deletedAt + this.days * 86_400;
  }

  /** After a delete of one of the app's conversations: its kept histories within their bound (none with 0 days). */
  afterDelete(appId: string): Promise<number> {
    return this.store.admin.trimKept(appId, this.days === 0 ? 0 : this.quota.bytes(appId), this.now());
  }

  /** Purges the histories past the retention, then what passes each app's bound; how many in all. */
  async sweep(): Promise<number> {
    const now = this.now();
    let n = await this.store.admin.purgeDeleted(now - this.days * 86_400, now);
    for (const app of this.apps()) n += await this.afterDelete(app);
    return n;
  }

  /** Sweeps now (awaited: start-up), then every `everyMs`; a failed sweep is told to `onError` and the next one tries again. */
  async start(onError: (err: Error) => void, everyMs = DELETED_SWEEP_MS): Promise<number> {
    const n = await this.sweep();
    this.sweeps = new Periodic(() => this.sweep(), everyMs, onError);
    return n;
  }

  /** Stops the periodic sweep, waiting for one under way. */
  async stop(): Promise<void> {
    await this.sweeps?.stop();
  }
}
