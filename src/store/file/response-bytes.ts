// D-27 with D-93: the bytes an app's response files take while they are kept (running, and ended within
// D-36's hour) count against its storage quota, per conversation, so that a deleted conversation's
// kept responses leave the count with it (D-176, one rule with D-73: a deleted conversation's history
// is outside the quota) and come back if it is restored.
export class ResponseBytes {
  /** Per app, the bytes of its counted conversations' response files. */
  private readonly apps = new Map<string, number>();
  private readonly conversations = new Map<string, { app: string; bytes: number; counted: boolean }>();

  /** `counted`: whether a conversation's bytes count when first seen (false for a deleted one). */
  constructor(private readonly counted: (conversationId: string) => boolean) {}

  add(appId: string, conversationId: string, bytes: number): void {
    let c = this.conversations.get(conversationId);
    if (!c) this.conversations.set(conversationId, (c = { app: appId, bytes: 0, counted: this.counted(conversationId) }));
    c.bytes += bytes;
    if (c.bytes <= 0) this.conversations.delete(conversationId);
    if (c.counted) this.addToApp(appId, bytes);
  }

  /** The conversation was deleted (false) or restored (true): its kept files leave or rejoin its app's count. */
  recount(conversationId: string, counted: boolean): void {
    const c = this.conversations.get(conversationId);
    if (!c || c.counted === counted) return;
    c.counted = counted;
    this.addToApp(c.app, counted ? c.bytes : -c.bytes);
  }

  of(appId: string): number {
    return this.apps.get(appId) ?? 0;
  }

  /** How many apps are counted (tests of the bounds). */
  get size(): number {
    return this.apps.size;
  }

  private addToApp(appId: string, bytes: number): void {
    const n = (this.apps.get(appId) ?? 0) + bytes;
    if (n > 0) this.apps.set(appId, n);
    else this.apps.delete(appId);
  }
}
