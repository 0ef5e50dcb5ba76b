// D-94: what an import may bring, bounded as the API bounds what a client sends (sizes, ids), and the
// apps it names checked against the target's: a file the API could never have written is refused with
// its line on both stores, before anything is kept, rather than stored whole or cut short by a column.
import { ID_PREFIX, LIMITS, charLength, metadataBytes, scanJson, type ItemT } from '../../contract/index.ts';
import { SAFE_ID } from '../record.ts';
import type { ConversationRecord, ResponseRecord } from '../types.ts';

/**
 * A history the API lets grow: D-29's limit refuses a send once it is reached, so the last exchange
 * may pass it; one exchange is bounded by the 1 MiB request body and a reply, so twice the limit holds
 * any history the API wrote and refuses one it never could.
 */
export const IMPORT_HISTORY_BYTES = 2 * LIMITS.conversationBytes;
/** PostgreSQL's `integer` (message_count, token counts): nothing the API counts comes near it. */
const INT32_MAX = 2 ** 31 - 1;
/** A message item takes more than this many bytes of history: a bound on a deleted conversation's message_count. */
const MIN_MESSAGE_BYTES = 64;

/** The apps of the target (id → team id), and the file's (from its header, when it names them). */
export interface AppsOf {
  target?: ReadonlyMap<string, string>;
  file?: ReadonlyMap<string, string>;
}

const quoted = (s: string) => JSON.stringify(s.length > 40 ? `${s.slice(0, 39)}…` : s);

/** D-7's shape of an id of `prefix` that a store can keep (it may name a file). */
function idProblem(field: string, id: string, prefix?: string): string | undefined {
  if (!SAFE_ID.test(id)) return `${field}: ${quoted(id)} must be 3 to 128 letters, digits, "_" or "-"`;
  if (prefix !== undefined && !id.startsWith(prefix)) return `${field}: ${quoted(id)} must start with ${prefix}`;
  return undefined;
}

function charsProblem(field: string, s: string | null, max: number): string | undefined {
  if (s === null) return undefined;
  const n = charLength(s);
  return n < 1 || n > max ? `${field} must be 1 to ${max} characters long (got ${n})` : undefined;
}

/** The target has the app, and, when the file names its apps' teams, in the same team. */
export function appProblem(appId: string, apps: AppsOf): string | undefined {
  const fileTeam = apps.file?.get(appId);
  if (apps.file && fileTeam === undefined) return `app ${appId} is not among the apps the file's header names`;
  if (!apps.target) return undefined;
  const team = apps.target.get(appId);
  if (team === undefined) return `app ${appId} does not exist in the target (its fixtures name no such app)`;
  if (fileTeam !== undefined && fileTeam !== team) return `app ${appId} belongs to ${fileTeam} in the file, to ${team} in the target`;
  return undefined;
}

/** A conversation's line, bounded as the API bounds the same fields (D-8…D-10, D-29, D-94). */
export function conversationProblem(
  record: ConversationRecord,
  items: readonly ItemT[],
  responses: readonly ResponseRecord[],
  apps: AppsOf,
): string | undefined {
  const metadata = scanJson(record.metadata, LIMITS.jsonDepth);
  const historyBytes = Buffer.byteLength(JSON.stringify(items)) + Buffer.byteLength(JSON.stringify(responses));
  const messageMax = record.deleted_at === null ? items.length : Math.floor(IMPORT_HISTORY_BYTES / MIN_MESSAGE_BYTES);
  return (
    idProblem('record.id', record.id, ID_PREFIX.conversation) ??
    appProblem(record.app_id, apps) ??
    charsProblem('record.title', record.title, LIMITS.titleChars) ??
    charsProblem('record.external_user_id', record.external_user_id, LIMITS.externalUserIdChars) ??
    Object.entries(record.generated_title)
      .map(([lang, t]) => charsProblem(`record.generated_title.${lang}`, t, LIMITS.titleChars))
      .find((p) => p !== undefined) ??
    (metadata.depth > LIMITS.jsonDepth ? `record.metadata must not be nested deeper than ${LIMITS.jsonDepth} levels` : undefined) ??
    (metadataBytes(record.metadata) > LIMITS.metadataBytes
      ? `record.metadata must be at most ${LIMITS.metadataBytes} bytes of JSON (got ${metadataBytes(record.metadata)})`
      : undefined) ??
    (record.message_count > messageMax
      ? `record.message_count: ${record.message_count} is more than the ${messageMax} messages the conversation can hold`
      : undefined) ??
    (historyBytes > IMPORT_HISTORY_BYTES
      ? `the history of ${record.id} is ${historyBytes} bytes, more than the ${IMPORT_HISTORY_BYTES} any conversation the API writes can reach (D-29)`
      : undefined) ??
    items.map((i, k) => idProblem(`items.${k}.id`, i.id)).find((p) => p !== undefined) ??
    responses.map((r, k) => idProblem(`responses.${k}.id`, r.id, ID_PREFIX.response)).find((p) => p !== undefined)
  );
}

/** A usage line: its id as its kind makes them, counts a column holds, an app of the target. */
export function usageProblem(
  u: { app_id: string; kind: 'response' | 'completion'; id: string; input_tokens: number; output_tokens: number },
  apps: AppsOf,
) {
  const prefix = u.kind === 'response' ? ID_PREFIX.response : ID_PREFIX.completion;
  return (
    idProblem('usage.id', u.id, prefix) ??
    appProblem(u.app_id, apps) ??
    (u.input_tokens > INT32_MAX || u.output_tokens > INT32_MAX ? `usage: a token count must be at most ${INT32_MAX}` : undefined)
  );
}
