// Export format version 2 (docs/data.md): the control plane travels with the data. One `control` line
// holds the document (teams, members with their password hashes, keys and tokens as their hashes, each
// secret key's webhook signing secret, plans, apps with their widget identity secrets): what a faithful
// restore needs, so that every key, token and password keeps working; hence an export is as secret as
// the store it came from (written 0600). One `audit` line per entry of the audit log, oldest first.
// Sessions, sign-in failure counts and last-use times are not carried: members sign in again.
import { z } from 'zod';
import { ACTOR_TYPES } from '../../contract/audit-actions.ts';
import { checkReferences, ControlDoc, type ControlDocT } from '../../core/control.ts';
import type { AuditRecord } from '../control.ts';

export const AuditRecordSchema = z.object({
  id: z.string().min(1).max(100),
  created_at: z.number().int().nonnegative(),
  team_id: z.string().nullable(),
  action: z.string().min(1).max(100),
  actor: z.object({ type: z.enum(ACTOR_TYPES), id: z.string().nullable(), email: z.string().nullable() }),
  address: z.string().nullable(),
  user_agent: z.string().nullable(),
  request_id: z.string().nullable(),
  target: z.object({ type: z.string(), id: z.string() }).nullable(),
  changes: z.record(z.string(), z.tuple([z.unknown(), z.unknown()])),
});

export function controlLine(doc: ControlDocT): string {
  return JSON.stringify({ type: 'control', document: doc });
}

export function auditLine(a: AuditRecord): string {
  const { id, created_at, team_id, action, actor, address, user_agent, request_id, target, changes } = a;
  return JSON.stringify({
    type: 'audit',
    entry: { id, created_at, team_id, action, actor, address, user_agent, request_id, target, changes },
  });
}

/** The document of a control line, or the words of what is wrong with it. */
export function parseControl(v: unknown): { doc: ControlDocT } | { problem: string } {
  const parsed = ControlDoc.safeParse(v);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    return { problem: `${['document', ...i.path].join('.')}: ${i.message}` };
  }
  const fault = checkReferences(parsed.data);
  return fault ? { problem: `document: ${fault}` } : { doc: parsed.data };
}

/** The apps of a document, id → team id (D-94's check of an import's apps). */
export function appsOfDoc(doc: ControlDocT): Map<string, string> {
  return new Map(doc.apps.map((a) => [a.id, a.team_id]));
}

/**
 * D-79 (export v2): an import replaces the target's control document whole, never merges into it (a
 * merge would bring back a key the source had revoked). So the target's must never have been changed
 * through the API: its audit log holds only the service's own entries (`fixtures.merged`) and sign-ins
 * (`session.*`, which change no document). Returns the words of a refusal, or undefined.
 */
export function replaceableProblem(actions: ReadonlyArray<{ action: string; n: number }>, where: string): string | undefined {
  const own = actions.filter((a) => a.action !== 'fixtures.merged' && !a.action.startsWith('session.'));
  if (own.length === 0) return undefined;
  const total = own.reduce((n, a) => n + a.n, 0);
  return `the control plane of ${where} has changes of its own (${total} audit entries: ${own.map((a) => a.action).join(', ')}); an export's control plane replaces a target's only if it was never changed: import into a new data directory or database; nothing was imported`;
}

/** The version an imported document takes: past both, so that every running instance reloads it (D-78). */
export function importedVersion(file: ControlDocT, target: ControlDocT | undefined): number {
  return Math.max(file.version, target?.version ?? 0) + 1;
}
