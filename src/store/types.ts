// The Store interface: what the services need from persistence, independent of how it is laid out.
import type { ItemT, ResponseErrorT, UsageT } from '../contract/index.ts';
import type { ConversationRecord } from './record.ts';

/** A conversation as the store keeps it: its schema, type and fast check are in record.ts. */
export type { ConversationRecord };

/** A response as persisted beside its items (D-17: a failed one too). */
export interface ResponseRecord {
  id: string;
  created_at: number;
  status: 'completed' | 'failed';
  error?: ResponseErrorT;
  usage?: UsageT;
}

/** What one conversation's own file holds. */
export interface ConversationFile {
  items: ItemT[];
  responses: ResponseRecord[];
}

export interface AppCounters {
  conversations: number;
  messages: number;
  users: number;
}

export interface Store {
  /** Reads everything needed to serve; throws a `StoreError` naming the file on bad data. */
  open(): Promise<void>;
  /** Waits for every write under way, then releases the data directory. */
  close(): Promise<void>;
  /** D-7: the next creation sequence number (never reused, also across restarts). */
  nextSeq(): number;
  getConversation(id: string): ConversationRecord | undefined;
  /** Every conversation of an app (soft-deleted included), in creation order; optionally one user's. */
  conversationsOf(appId: string, externalUserId?: string): readonly ConversationRecord[];
  /** Creates or replaces a conversation record; resolves once it is durable. */
  putConversation(record: ConversationRecord): Promise<void>;
  readConversationFile(id: string): Promise<ConversationFile>;
  /**
   * Appends items (and a response) to a conversation's file, then stores its updated record;
   * resolves once both are durable. `base` is the record `record` was derived from: fields changed
   * meanwhile by others (a rename during a response) are kept, not overwritten.
   */
  appendToConversation(record: ConversationRecord, items: ItemT[], response?: ResponseRecord, base?: ConversationRecord): Promise<void>;
  appCounters(appId: string): AppCounters;
}

/** A data file that cannot be read as it should be: the message names the file and the fault. */
export class StoreError extends Error {
  constructor(
    readonly file: string,
    detail: string,
  ) {
    super(`${file}: ${detail}`);
    this.name = 'StoreError';
  }
}
