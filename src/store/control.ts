// The control plane's storage (docs/control-plane.md, D-75…D-78): one small versioned document of what
// changes rarely (teams, members, keys, tokens, plans, apps), changed atomically with its audit entries,
// and what is written per request or attempt beside it (audit, sessions, sign-in failures, key use).
// Backends: src/store/file/control*.ts (lowdb document and journals) and src/store/pg/control*.ts.
import { randomBytes } from 'node:crypto';
import type { ActorType, AuditAction } from '../contract/audit-actions.ts';
import { checkReferences, COLLECTIONS, ControlDoc, type ControlDocT, costOf, type FixturesT } from '../core/control.ts';
import { newId } from '../core/ids.ts';
import { defaultSigningKey } from '../core/endpoint-signing.ts';

/** D-75: who did a change. */
export interface AuditActor {
  type: ActorType;
  id: string | null;
  email: string | null;
}

/** D-75: an entry as a change describes it; never a secret (a key's redacted form only). */
export interface AuditDraft {
  /** The team it belongs to (whose members may read it); null for the service's own (a plan seeded). */
  team_id: string | null;
  action: AuditAction;
  actor: AuditActor;
  address: string | null;
  user_agent: string | null;
  request_id: string | null;
  target: { type: string; id: string } | null;
  changes: Record<string, [unknown, unknown]>;
}

/** An entry as stored: its action read back as written (an import may carry any). */
export interface AuditRecord extends Omit<AuditDraft, 'action'> {
  action: string;
  id: string;
  /** Unix seconds. */
  created_at: number;
}

export interface AuditQuery {
  team_id: string;
  action?: string;
  /** Unix seconds, inclusive. */
  since?: number;
  until?: number;
  limit: number;
  /** The id of the last entry of the previous page. */
  after?: string;
}

export interface AuditLog {
  /** Durable when it resolves (sign-ins and other entries that change no document). */
  append(entries: AuditDraft[]): Promise<AuditRecord[]>;
  /** Newest first; `has_more` says whether older entries match. */
  list(q: AuditQuery): Promise<{ data: AuditRecord[]; has_more: boolean }>;
}

/** D-67: a dashboard session, kept by the SHA-256 of its cookie's value. */
export interface SessionRecord {
  id: string;
  member_id: string;
  team_id: string;
  csrf_token: string;
  /** Milliseconds. */
  created_at: number;
  seen_at: number;
}

export interface Sessions {
  create(s: SessionRecord): Promise<void>;
  get(id: string): Promise<SessionRecord | undefined>;
  /** Renews the idle expiry (callers do it at most once a minute). */
  touch(id: string, at: number): Promise<void>;
  end(id: string): Promise<void>;
  /** Ends every session of a member but `except` (a password change, a removal). */
  endMember(memberId: string, except?: string): Promise<void>;
}

/** D-70: when keys and tokens were last used, recorded off the request path. */
export interface KeyUse {
  /** In memory; written at most once a minute per id, and at close. */
  record(id: string, at: number): void;
  /** Unix seconds of each id's last use known here or stored. */
  lastUsed(ids: readonly string[]): Promise<Map<string, number>>;
}

/** D-69: where failed sign-ins are counted (services/admin/throttle.ts holds the policy). */
export interface FailureCounts {
  /**
   * D-165: one at a time for the same keys, with every instance: reads each key's failures at or after
   * `since` (ms, oldest first, one list per key) and, when `admit` answers 0, counts one failure of
   * every key at `at` before resolving (a reservation). Resolves with `admit`'s answer.
   */
  reserve(keys: readonly string[], since: number, at: number, admit: (failures: number[][]) => number): Promise<number>;
  /** Takes back one failure of `key` counted at `at` (the reservation of a password that was right). */
  release(key: string, at: number): Promise<void>;
  /** Forgets `key`'s failures (a correct password). */
  clear(key: string): Promise<void>;
}

/** The change a caller makes to a copy of the document; it returns the audit entries of the change, or throws to change nothing. */
export type ControlChange = (draft: ControlDocT) => AuditDraft[];

export interface ControlPlane {
  /** The document as this instance last saw it (D-78: a change is answered once every live instance holds it). */
  read(): ControlDocT;
  /** Applies `change` to the latest document with its audit entries, atomically; durable when it resolves. */
  apply(change: ControlChange): Promise<ControlDocT>;
  /** Told of every new version, this instance's or another's. */
  onChange(fn: (doc: ControlDocT) => void): void;
  readonly audit: AuditLog;
  readonly sessions: Sessions;
  readonly signInFailures: FailureCounts;
  readonly keyUse: KeyUse;
  close(): Promise<void>;
}

/** What a backend opens the control plane with. */
export interface ControlOptions {
  /** The seed of a new control plane, merged into an existing one by D-77's rule. */
  fixtures: FixturesT;
  /** D-75: how long audit entries are kept (the settings' AUDIT_RETENTION_DAYS); none given: all are. */
  auditRetentionDays?: number;
  /** Told what D-77's merge added and what differs and was left. */
  log?: (message: string) => void;
  now?: () => number;
}

/** D-67: a session's absolute expiry (and its idle one): no session outlives it, so a store may forget older ones. */
export const SESSION_MAX_AGE_MS = 7 * 86_400_000;
export const SESSION_IDLE_MS = 12 * 3_600_000;
/** D-70: a key's or token's last use is written at most this often. */
export const KEY_USE_FLUSH_MS = 60_000;

export function auditRecord(d: AuditDraft, now: number): AuditRecord {
  return { id: newId('audit'), created_at: Math.floor(now / 1000), ...d };
}

/** A new document from the fixtures (D-77), seeded at `nowMs`: the date of the records that name none. */
export function seedDoc(f: FixturesT, nowMs: number): ControlDocT {
  const doc = ControlDoc.parse({ ...structuredClone(f), version: 1, tokens: [], webhook_endpoints: [] });
  for (const name of COLLECTIONS) for (const r of doc[name] as object[]) seededAt(r, nowMs);
  return doc;
}

/**
 * D-77: a fixture record that names no `created_at` (its schema's default, 0) is dated when it is
 * seeded, so that the demo's members and keys do not read as made in 1970. Mutates and returns `r`.
 */
function seededAt<T extends object>(r: T, nowMs: number): T {
  const dated = r as { created_at?: unknown };
  if (dated.created_at === 0) dated.created_at = Math.floor(nowMs / 1000);
  return r;
}

/**
 * What a start compares of an existing record (`stored`) with its fixture (D-77): neither what a sign-in
 * writes (`last_sign_in_at`, and the password's hash made again at another cost, D-66) nor the seeding's
 * date of a fixture that names none, which are no change of the record.
 */
function comparable(r: object, fixture: object, stored: object): unknown {
  const { last_sign_in_at: _signIn, ...rest } = r as Record<string, unknown>;
  if ((fixture as { created_at?: unknown }).created_at === 0) delete rest.created_at;
  const hashes = [stored, fixture].map((x) => (x as { password_hash?: unknown }).password_hash);
  if (typeof hashes[0] === 'string' && typeof hashes[1] === 'string' && costOf(hashes[0]) !== costOf(hashes[1])) delete rest.password_hash;
  return sorted(rest);
}

/**
 * D-77's rule for a control plane that exists: records of the fixtures whose ids it does not have yet
 * are added (dated `nowMs` when they name no date); nothing existing is changed or removed. Mutates
 * `draft`; says what it added and which existing records differ from the fixtures (left as they are).
 */
export function mergeFixtures(draft: ControlDocT, f: FixturesT, nowMs: number): { added: string[]; differs: string[] } {
  const added: string[] = [];
  const differs: string[] = [];
  for (const name of COLLECTIONS) {
    if (name === 'tokens' || name === 'webhook_endpoints') continue;
    const have = new Map((draft[name] as Array<{ id: string }>).map((r) => [r.id, r]));
    for (const r of f[name] as Array<{ id: string }>) {
      const own = have.get(r.id);
      if (!own) {
        (draft[name] as unknown[]).push(seededAt(structuredClone(r), nowMs));
        added.push(`${name}/${r.id}`);
      } else if (JSON.stringify(comparable(own, r, own)) !== JSON.stringify(comparable(r, r, own))) differs.push(`${name}/${r.id}`);
    }
  }
  return { added, differs };
}

/**
 * D-150: an endpoint saved before endpoints named their signing key is assigned D-150's default (the
 * team's oldest working secret key, the demo key on the demo team), audited with the service as actor.
 * Both backends run it at open in one change, which makes it the migration of either; an endpoint of a
 * team without such a key keeps none (`missing`: disabled at its next delivery). Mutates `draft`.
 */
export function assignSigningKeys(draft: ControlDocT, nowS: number): AuditDraft[] {
  const entries: AuditDraft[] = [];
  for (const e of draft.webhook_endpoints) {
    const k = e.signing_key_id === null ? defaultSigningKey(draft.keys, e.team_id, nowS) : undefined;
    if (!k) continue;
    e.signing_key_id = k.id;
    entries.push(bySystem(e.team_id, 'webhook_endpoint.updated', { type: 'webhook_endpoint', id: e.id }, { signing_key_id: [null, k.id] }));
  }
  return entries;
}

/** A JSON value with its object keys sorted (PostgreSQL's jsonb does not keep their order). */
function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
    );
  return v;
}

/** The audit entries of D-77's merge (the service's own actor). */
export function mergeAudit(added: string[]): AuditDraft[] {
  return added.map((what) => {
    const [type, id] = what.split('/') as [string, string];
    return bySystem(null, 'fixtures.merged', { type, id });
  });
}

/** D-75: who made a change the service made itself: no member, no request. */
const SYSTEM = { actor: { type: 'system', id: null, email: null }, address: null, user_agent: null, request_id: null } as const;

/** D-75: an entry of a change the service made itself. */
export function bySystem(
  team: string | null,
  action: AuditAction,
  target: AuditDraft['target'],
  changes: AuditDraft['changes'] = {},
): AuditDraft {
  return { team_id: team, action, target, changes, ...SYSTEM, actor: { ...SYSTEM.actor } };
}

/** Applies `change` to a copy of `doc` and checks the result: the next document and its audit entries, or a throw. */
export function changed(doc: ControlDocT, change: ControlChange): { next: ControlDocT; entries: AuditDraft[] } {
  const draft = structuredClone(doc);
  const entries = change(draft);
  const parsed = ControlDoc.safeParse({ ...draft, version: doc.version + 1 });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new Error(`control document: ${issue.path.join('.')}: ${issue.message}`);
  }
  const fault = checkReferences(parsed.data);
  if (fault) throw new Error(`control document: ${fault}`);
  return { next: parsed.data, entries };
}

/** D-67: 32 random bytes, base64url: a session's cookie value or a CSRF token. */
export function sessionSecret(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * D-70's key use, kept in memory and written by `write` at most once a minute per id (and at close),
 * so that recording a use costs a request nothing but a map update.
 */
export class KeyUseRecorder implements KeyUse {
  private readonly seen = new Map<string, number>();
  private readonly written = new Map<string, number>();
  private readonly due = new Map<string, number>();
  private readonly timer: NodeJS.Timeout;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: {
      write(uses: Map<string, number>): Promise<void>;
      read(ids: readonly string[]): Promise<Map<string, number>>;
    },
    private readonly onError: (err: Error) => void = () => {},
    everyMs = KEY_USE_FLUSH_MS / 6,
  ) {
    this.timer = setInterval(() => void this.flush(), everyMs);
    this.timer.unref();
  }

  record(id: string, atMs: number): void {
    const at = Math.floor(atMs / 1000);
    if ((this.seen.get(id) ?? 0) >= at) return;
    this.seen.set(id, at);
    if (at * 1000 - (this.written.get(id) ?? 0) * 1000 >= KEY_USE_FLUSH_MS) this.due.set(id, at);
  }

  async lastUsed(ids: readonly string[]): Promise<Map<string, number>> {
    const stored = await this.store.read(ids);
    for (const id of ids) {
      const mine = this.seen.get(id);
      if (mine !== undefined && mine > (stored.get(id) ?? 0)) stored.set(id, mine);
    }
    return stored;
  }

  /** Writes what is due (every use, at close). */
  flush(all = false): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      const batch = new Map(all ? this.seen : this.due);
      for (const [id, at] of this.written) if (batch.get(id) === at) batch.delete(id);
      this.due.clear();
      if (batch.size === 0) return;
      try {
        await this.store.write(batch);
        for (const [id, at] of batch) this.written.set(id, at);
      } catch (err) {
        this.onError(err as Error);
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush(true);
  }
}
