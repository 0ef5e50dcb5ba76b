// The Store interface: what the services need from persistence, independent of how it is laid out.
// It owns the consistency of each conversation: every change of one conversation is applied in turn,
// to the record as it is then (never to a copy a service read earlier), and an exchange is saved in
// one atomic step with its Idempotency-Key claim. The file store (file/file-store.ts) does it with a
// queue per conversation and journal records; the PostgreSQL store (pg/pg-store.ts) with a
// transaction per change that locks the conversation's row (`SELECT … FOR UPDATE`), which also holds
// across several instances. src/store/backend.ts opens one or the other.
import type { ItemT, ResponseErrorT, UnsequencedEvent, UsageT } from '../contract/index.ts';
import type { IdempotencyClaim, KeptClaim } from '../core/claims.ts';
import type { ConversationRecord } from './record.ts';
import type { OutboxEvent, WebhookOutbox } from './webhooks.ts';
import type { UsageEntry } from './shared.ts';

/** A conversation as the store keeps it: its schema, type and fast check are in record.ts. */
export type { ConversationRecord };

/** A record to create: without a seq, the store gives it the next one as it creates it (D-7). */
export type NewConversation = Omit<ConversationRecord, 'seq'> & { seq?: number };

/** A response as persisted beside its items (D-17: a failed one too). */
export interface ResponseRecord {
  id: string;
  created_at: number;
  status: 'completed' | 'failed';
  error?: ResponseErrorT;
  usage?: UsageT;
}

/** What one conversation's history holds. */
export interface History {
  items: ItemT[];
  responses: ResponseRecord[];
}

/**
 * A change of a conversation: the fields to change (a whole record will do; fields equal to the
 * current ones change nothing). `message_count` is the new count.
 */
export type ConversationChange = Partial<
  Pick<ConversationRecord, 'title' | 'deleted_at' | 'generated_title' | 'metadata' | 'message_count'>
>;

/** Everything one exchange of send message leaves (§4.6, D-17: a failed response too), saved at once. */
export interface ResponseSave {
  conversationId: string;
  /** The user's message, then the output items. */
  items: ItemT[];
  /** The response, with its usage. */
  response: ResponseRecord;
  /**
   * What the exchange changes in the conversation's record, from the record as it is when the
   * exchange is applied (a rename or another exchange may have landed since the response started).
   */
  apply(current: ConversationRecord): ConversationChange;
  claim?: IdempotencyClaim;
  /** The record as read before the reply (`Store.readForReply`): a store may save in one step if it is unchanged (D-104). */
  base?: SaveBase;
  /** The reply's usage row, written in the save's own step (`Store.savesUsage`, D-104). */
  usage?: UsageEntry;
}

/**
 * D-104: a conversation's record as read before a reply, with the store's mark of the version read
 * (PostgreSQL: its row and `xmin`; opaque to the services). A save that finds the row still at that
 * version writes the exchange in one statement; otherwise it locks the row and applies `apply` to it.
 */
export interface SaveBase {
  record: ConversationRecord;
  mark?: unknown;
}

/** What send message reads before its reply, after its turn in line (D-37), in one step (D-104). */
export interface ReplyStart extends History {
  /** The history's size as stored (D-29). */
  bytes: number;
  /** D-27: the app's stored bytes, read with it. */
  storedBytes: number;
  /** The record as read (none: no such conversation). */
  base: SaveBase | undefined;
}

/** One page of an app's live conversations in creation order (D-12), as a list asks for it. */
export interface ConversationPageQuery {
  /** Only this user's conversations. */
  externalUserId?: string;
  /** 'up' walks the creation order forwards (oldest first), 'down' backwards. */
  direction: 'up' | 'down';
  /**
   * Start after this conversation of the app, in the direction of travel (D-11: a soft-deleted one is
   * still a valid cursor). None: from the start of that direction.
   */
  cursor?: string;
  limit: number;
}

export interface ConversationPage {
  /** The live conversations in the direction of travel (soft-deleted ones skipped). */
  records: ConversationRecord[];
  /** More live conversations exist beyond the page in the direction of travel. */
  hasMore: boolean;
}

/**
 * D-27: the storage quota's check, run by the store where the bytes are added (inside its transaction
 * on PostgreSQL, so that instances creating at once cannot all pass it): gets the app's stored bytes
 * as they are then, and throws to refuse. `running`: the most that writes running at once, not yet in
 * `storedBytes`, could add (D-101: PostgreSQL far from the quota; 0 otherwise).
 */
export type QuotaAdmit = (storedBytes: number, running?: number) => void;

export interface AppCounters {
  conversations: number;
  messages: number;
  users: number;
}

export interface Store {
  /** Reads everything needed to serve; throws a `DataFileError` naming the file on bad data. */
  open(): Promise<void>;
  /** Waits for every write under way, then releases the data directory. */
  close(): Promise<void>;
  /** D-7: the next creation sequence number (never reused, also across restarts and instances). */
  nextSeq(): Promise<number>;
  /**
   * D-28: a conversation's record. Its `metadata` may be read from disk on access: read it when it is
   * served, and do not keep records beyond a request.
   */
  getConversation(id: string): Promise<ConversationRecord | undefined>;
  /**
   * A get (§4.3) in one read: the record and, unless it is soft-deleted, its history's items (read
   * as one snapshot with it). Undefined when there is no such conversation.
   */
  readConversation(id: string): Promise<{ record: ConversationRecord; items?: ItemT[] } | undefined>;
  /**
   * One page of an app's live conversations (D-12); undefined when `cursor` is not a conversation of
   * this app. A store reads only the page (PostgreSQL: keyset pagination on (app_id, seq, id)).
   */
  listConversations(appId: string, q: ConversationPageQuery): Promise<ConversationPage | undefined>;
  /**
   * Creates a conversation record (a new id: nothing else can be changing it), with the request's
   * Idempotency-Key claim in the same atomic step; resolves with the record once it is durable. A
   * record without a seq gets the next (D-7) in that step (on PostgreSQL: no round trip of its own).
   * `admit` (the storage quota, D-27) is run in that step with the app's stored bytes; if it throws,
   * nothing is created.
   */
  putConversation(record: NewConversation, claim?: IdempotencyClaim, admit?: QuotaAdmit): Promise<ConversationRecord>;
  /**
   * Changes one conversation in its turn, after every earlier change of it: `change` gets the record
   * as it is now (undefined if there is none) and returns the new one, or throws to change nothing.
   * Resolves with the new record once it is durable.
   */
  updateConversation(id: string, change: (current: ConversationRecord | undefined) => ConversationChange): Promise<ConversationRecord>;
  /**
   * §4.4: `updateConversation` of the title alone, of a live conversation of `appId` (undefined, and
   * nothing changed, when it is none): on PostgreSQL one statement (D-42, revised).
   */
  renameConversation(appId: string, id: string, title: string | null): Promise<ConversationRecord | undefined>;
  /**
   * Saves an exchange in the conversation's turn, as one atomic step: its items, its response, the
   * record `save.apply` derives and the Idempotency-Key claim, all or nothing. Resolves once durable.
   */
  saveResponse(save: ResponseSave): Promise<ConversationRecord>;
  /** The claims saved with exchanges at or after `since` (ms), for the idempotency stage to honour. */
  idempotencyClaims(since: number): Promise<KeptClaim[]>;
  /** A conversation's history, with `bytes`, its size as stored (D-29 limits it). */
  readHistory(id: string): Promise<History & { bytes: number }>;
  /**
   * D-104: what a reply needs before it starts, read at once: the history, the app's stored bytes and
   * the record with its version for the save (the file store: from memory and the history's cache).
   */
  readForReply(id: string, appId: string): Promise<ReplyStart>;
  /**
   * D-104: `saveResponse` writes `save.usage` in the exchange's own step (PostgreSQL: the usage ledger
   * is in the same database); false: the usage ledger records it in a step of its own first.
   */
  readonly savesUsage: boolean;
  /** D-24: an app's counters (soft-deleted conversations included). */
  appCounters(appId: string): Promise<AppCounters>;
  /** D-27: bytes of an app's stored conversations (soft-deleted ones excluded), for its plan's quota. */
  storedBytes(appId: string): Promise<number>;
  /** D-73: the conversations as their team sees them (deleted ones too), and the retention of deleted histories. */
  readonly admin: AdminConversations;

  /**
   * Responses still being produced (resumable responses, docs/responses.md, D-30…D-39). Their state
   * and events live in the store, not in the process that produces them, so that another instance
   * can serve a look-up, a resume or a cancel; `saveResponse` saves the exchange, and the terminal
   * event appended after it ends the live response.
   */
  readonly responses: LiveResponses;
  /**
   * How often a running instance looks for responses whose instance died (D-38, by
   * `responses.unfinished`); null when one process owns the data (the file store: start-up only).
   */
  readonly sweepMs: number | null;
  /**
   * D-91: whether the store can be out of reach at all: a database across a connection can, a data
   * directory that is the process's own cannot (its requests then pass no bound, at no cost).
   */
  readonly reachable: 'always' | 'connected';
  /**
   * D-91: whether the store can serve now (PostgreSQL: the database answered this instance's last look
   * and it holds its liveness lock; the file store, the process's own: always).
   */
  available(): boolean;
  /** D-91: whether `err` says the store is out of reach for now (a lost connection), not that the work failed. */
  isUnavailable(err: unknown): boolean;
  /**
   * D-84: the webhook outbox, written in the same atomic step as each change's events (those of the
   * `changeEvents` the store was opened with: file/options.ts, pg/options.ts).
   */
  readonly outbox: WebhookOutbox;
}

/** D-73: what the store keeps of a conversation beyond its record: whether a deleted one's history was purged. */
export interface AdminRecord {
  record: ConversationRecord;
  /**
   * Unix seconds when its history (and metadata) was purged; null while it is live or deleted and
   * kept. A conversation deleted before D-73 was purged as it was deleted.
   */
  purgedAt: number | null;
}

/** One page of an app's conversations for its team (D-73): a list page, deleted ones as `deleted` says. */
export interface AdminPageQuery extends ConversationPageQuery {
  deleted: 'exclude' | 'include' | 'only';
  /** A case-insensitive part of the title or of the external user id. */
  text?: string;
}

/** What the restore of a conversation found (D-73): restored, or why not. */
export type RestoreResult = { restored: AdminRecord } | { refused: 'missing' | 'live' | 'purged' };

/**
 * D-73: an app's conversations as its team sees them, and the retention of deleted histories: a soft
 * delete keeps the history (outside the storage quota) until a purge removes it with the metadata.
 */
export interface AdminConversations {
  /** One page in creation order (D-12); undefined when `cursor` is not a conversation of this app. */
  page(appId: string, q: AdminPageQuery): Promise<{ records: AdminRecord[]; hasMore: boolean } | undefined>;
  /** One conversation, deleted or not. */
  get(id: string): Promise<AdminRecord | undefined>;
  /** Makes a deleted conversation whose history is kept live again, in its turn. */
  restore(id: string): Promise<RestoreResult>;
  /** Purges the kept histories of conversations deleted at or before `deletedBefore` (Unix s); how many. */
  purgeDeleted(deletedBefore: number, now: number): Promise<number>;
  /** Purges an app's kept histories, oldest deletion first, until they hold at most `maxBytes`; how many. */
  trimKept(appId: string, maxBytes: number, now: number): Promise<number>;
  /** Bytes of an app's kept histories (their records' and metadata's too, as the quota counts a live one). */
  keptBytes(appId: string): Promise<number>;
}

/** The live responses of a store (`Store.responses`): the file store's response log, or PostgreSQL's rows. */
export interface LiveResponses {
  /**
   * D-35: begins a live response, durably (start-up finds it if the process dies), unless its
   * conversation already has one: then nothing is begun and the running one's id is returned.
   * `first`, the response's first event (`response.created`, sequence number 0), is kept in the same
   * durable step, so that it can go out as soon as the begin resolves (D-35 revised); begun, the
   * response's next event is appended.
   */
  begin(start: LiveResponseStart, first: UnsequencedEvent): Promise<{ running?: string }>;
  /**
   * Appends the next event (its sequence number is its position, D-16); a terminal event ends the response.
   * Resolves once the event is kept (a trace sees it, and start-up after a kill -9 finds it, D-38): the
   * producer's answer hands it out then (KeptEvents).
   */
  append(id: string, event: UnsequencedEvent): Promise<void>;
  /** What is known of a response: live, ended with its events, or ended and past D-36's retention. */
  trace(id: string): Promise<ResponseTrace | undefined>;
  /**
   * The events after sequence number `after`, then the live ones as they come, until the terminal
   * one; ends early when `signal` aborts. Throws `ResponseEventsExpired` past the retention.
   */
  follow(id: string, after: number, signal?: AbortSignal): AsyncIterable<UnsequencedEvent>;
  /** D-33: asks whoever produces the response to stop it (that instance saves it). */
  requestCancel(id: string): Promise<void>;
  /** Called when a cancel of `id` is asked (by any instance); returns the unsubscribe. */
  onCancelRequest(id: string, listener: () => void): () => void;
  /**
   * D-38: the responses live when the last process stopped (start-up saves them `interrupted`); on a
   * store shared by instances, those whose instance died, each handed to one caller only.
   */
  unfinished(): Promise<UnfinishedResponse[]>;
}

/** A live response as begun: where it belongs and what it was asked (to save it if it is interrupted). */
export interface LiveResponseStart {
  id: string;
  app_id: string;
  conversation_id: string;
  created_at: number;
  input: { content: string; metadata: Record<string, unknown> | null };
}

/** Where a response belongs, without what it was asked (D-93: not kept in memory once it is begun). */
export type ResponseRef = Omit<LiveResponseStart, 'input'>;

export interface ResponseTrace {
  start: ResponseRef;
  /** The events so far, unsequenced (event n has sequence number n); null once past the retention (D-36). */
  events: readonly UnsequencedEvent[] | null;
  /** Its terminal event was appended (or it ended before its events expired). */
  ended: boolean;
}

/** D-36: how long a response's events stay resumable after its end. */
export const RESPONSE_EVENTS_TTL_MS = 60 * 60_000;

/** D-93: how long the look-up still finds a response after its end (from its conversation, past D-36's hour); then 404. */
export const RESPONSE_LOOKUP_RETENTION_MS = 30 * 86_400_000;

export const TERMINAL_EVENTS: ReadonlySet<string> = new Set(['response.completed', 'response.failed']);

/** A response left running by a process that stopped, with what it was asked (D-38 saves it). */
export interface UnfinishedResponse extends ResponseTrace {
  start: LiveResponseStart;
}

/**
 * What a store asks when it makes a change: the events that report it, computed from the records as
 * they are in the change's atomic step (none when no endpoint wants them). The file store writes them
 * in the change's journal line, PostgreSQL in its transaction.
 */
export interface ChangeEvents {
  /** Whether any event of `appId` could be wanted now: a store builds the records an event needs only then. */
  wants(appId: string): boolean;
  created(record: ConversationRecord): OutboxEvent[];
  updated(before: ConversationRecord, after: ConversationRecord): OutboxEvent[];
  /** A deleted conversation restored on the admin surface (D-73), as it is now. */
  restored(record: ConversationRecord): OutboxEvent[];
  saved(record: ConversationRecord, save: ResponseSave): OutboxEvent[];
}

/** The change events of a store opened without webhooks (tools, tests): no event is ever wanted. */
export const NO_CHANGE_EVENTS: ChangeEvents = {
  wants: () => false,
  created: () => [],
  updated: () => [],
  restored: () => [],
  saved: () => [],
};

/**
 * What a store is opened with to make its changes' events: given its outbox (whose follows say which
 * apps live listeners want, D-88), the events it asks at each change. Default: NO_CHANGE_EVENTS.
 */
export type ChangeEventsOf = (outbox: WebhookOutbox) => ChangeEvents;

/** `renameConversation` by `updateConversation` (the file store's, and PostgreSQL's when an event is wanted, D-88). */
export async function renameByUpdate(
  store: Pick<Store, 'updateConversation'>,
  appId: string,
  id: string,
  title: string | null,
): Promise<ConversationRecord | undefined> {
  const notLive = new Error('not a live conversation of the app');
  try {
    return await store.updateConversation(id, (r) => {
      if (!r || r.app_id !== appId || r.deleted_at !== null) throw notLive;
      return { ...r, title };
    });
  } catch (err) {
    if (err === notLive) return undefined;
    throw err;
  }
}
