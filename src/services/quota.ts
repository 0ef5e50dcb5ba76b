// D-27: each plan's storage quota, the bytes of an app's stored conversations (records and
// histories; soft-deleted ones excluded, so deleting frees space). A create is refused if it would
// pass the quota; a send message once the quota is reached (an exchange's size is known only after
// it ran, so an app may end at most one exchange past its quota). D-92: the widget's writes stop at its
// share of the quota.
import { apiError } from '../core/api-errors.ts';
import { LIMITS } from '../contract/index.ts';
import { DEFAULT_STORAGE_BYTES, type Tenants } from '../core/tenants.ts';
import type { QuotaAdmit, Store } from '../store/types.ts';

/**
 * D-29: a conversation whose history has reached its bound (`max`: its plan's, 4 MiB by default)
 * takes no more messages; it can still be read.
 */
export function checkHistory(conversationId: string, bytes: number, max = LIMITS.conversationBytes): void {
  if (bytes < max) return;
  throw apiError(
    'conversation_too_large',
    `Conversation ${JSON.stringify(conversationId)} has reached the limit of ${MB(max)} of stored history; start a new conversation (this one can still be read).`,
    { param: 'conversation_id' },
  );
}

const MB = (n: number) => `${(n / 2 ** 20).toLocaleString('en-US', { maximumFractionDigits: 1 })} MiB`;

export class StorageQuota {
  constructor(
    private readonly store: Pick<Store, 'storedBytes'>,
    private readonly tenants: Pick<Tenants, 'apps' | 'plans'>,
  ) {}

  /**
   * Throws `storage_quota_exceeded` if storing `adding` more bytes for the app would pass its quota, or
   * (for the widget, D-92) the widget's share of it.
   */
  async check(appId: string, adding: number, widget = false): Promise<void> {
    this.admit(appId, adding, widget)(await this.store.storedBytes(appId));
  }

  /** D-27: the app's plan's storage quota, in bytes (D-73 bounds its deleted histories kept by it too). */
  bytes(appId: string): number {
    return this.tenants.plans.get(this.tenants.apps.get(appId)?.plan ?? '')?.storage_bytes ?? DEFAULT_STORAGE_BYTES;
  }

  /** D-29: the bound of one conversation's history in this app's plan. */
  historyBytes(appId: string): number {
    return this.tenants.plans.get(this.tenants.apps.get(appId)?.plan ?? '')?.conversation_bytes ?? LIMITS.conversationBytes;
  }

  /**
   * The same check, for the store to run where it adds the bytes (a create: in its transaction on
   * PostgreSQL, so that instances creating at once never pass the quota together).
   */
  admit(appId: string, adding: number, widget = false): QuotaAdmit {
    const app = this.tenants.apps.get(appId);
    const plan = this.tenants.plans.get(app?.plan ?? '');
    const quota = plan?.storage_bytes ?? DEFAULT_STORAGE_BYTES;
    // D-92: the widget stores nothing more once the app's stored bytes reach its share, so that the
    // rest of the quota stays the team's own API's whatever the public key does.
    const share = widget && app?.widget ? Math.floor(quota * app.widget.limits.storage_share) : quota;
    return (stored, running = 0) => {
      if (stored + running + adding <= share && stored + running < share) return;
      if (share < quota) {
        throw apiError(
          'storage_quota_exceeded',
          `App ${JSON.stringify(appId)} has used the widget's share of its plan's storage quota (${MB(stored)} stored; the widget may store up to ${MB(share)} of ${MB(quota)}). Delete conversations it no longer needs, or move the app to a plan with a larger quota.`,
        );
      }
      throw apiError(
        'storage_quota_exceeded',
        `App ${JSON.stringify(appId)} has used its plan's storage quota (${MB(stored)} stored of ${MB(quota)}). Delete conversations it no longer needs, or move the app to a plan with a larger quota.`,
      );
    };
  }
}
