// Every case of the suite, in the order of the interface's sections; --list, the runner and
// the conformance reference page all read this one table.
import type { CaseDef, Profile } from './context.ts';
import { appErrors, auth } from './cases/auth.ts';
import { config, metricsCases, versioning } from './cases/apps.ts';
import { completions } from './cases/completions.ts';
import { create, get, remove, update } from './cases/conversations.ts';
import { completionStreamCases, conversationStreamCases, dataSpecCases, functionCallCases } from './cases/events.ts';
import { idempotentCompletion, idempotentCreate, idempotentSend } from './cases/idempotency.ts';
import { limits } from './cases/limits.ts';
import { list, listLimits } from './cases/list.ts';
import { messageMetrics, sendMessage, severalExchanges } from './cases/messages.ts';
import { completionLeft, webhookReads } from './cases/webhook-reads.ts';
import { webhooks } from './cases/webhooks.ts';
import { widget } from './cases/widget.ts';
import { resumable, resumableCorners } from './cases/resumable.ts';
import { scenarios } from './cases/scenarios.ts';
import { unicodeCompletion, unicodeCreate, unicodeSend, unicodeUpdate } from './cases/unicode.ts';

const SECTION_TITLES: Record<string, string> = {
  '4.1': 'Create conversation',
  '4.2': 'List conversations',
  '4.3': 'Get conversation',
  '4.4': 'Update conversation',
  '4.5': 'Delete conversation',
  '4.6': 'Send message',
  '4.7': 'Create completion',
  '4.8': 'Get app config',
  '4.9': 'Get app metrics',
  '5': 'Authentication',
  '5.4': "Publishable key: the messenger widget (Parley's extension, docs/widget.md)",
  '5.5': "Webhooks, verified with the secret key (Parley's extension, docs/webhooks.md)",
  '6': 'Events (SSE)',
  '7': 'Errors',
  '8': 'Limits',
  '9': 'Versioning',
};

/** `§4.6 Send message`; a section that is no number of the interface (check-receiver's, D-175) as it is. */
export function sectionTitle(section: string): string {
  if (!/^\d/.test(section)) return section;
  return `§${section} ${SECTION_TITLES[section] ?? ''}`.trim();
}

function sectionKey(s: string): number[] {
  return s.split('.').map(Number);
}

const ALL: CaseDef[] = [
  ...create,
  ...unicodeCreate,
  ...idempotentCreate,
  ...list,
  ...get,
  ...update,
  ...unicodeUpdate,
  ...remove,
  ...sendMessage,
  ...unicodeSend,
  ...severalExchanges,
  ...resumable,
  ...resumableCorners,
  ...scenarios,
  ...idempotentSend,
  ...completions,
  ...unicodeCompletion,
  ...idempotentCompletion,
  ...completionLeft,
  ...config,
  ...metricsCases,
  ...messageMetrics,
  ...auth,
  ...widget,
  ...webhooks,
  ...webhookReads,
  ...conversationStreamCases,
  ...completionStreamCases,
  ...dataSpecCases,
  ...functionCallCases,
  ...appErrors,
  ...listLimits,
  ...limits,
  ...versioning,
];

/** Sorted by section (stable inside one), checked for unique, well-formed ids at load time. */
export const CASES: readonly CaseDef[] = (() => {
  const seen = new Set<string>();
  for (const c of ALL) {
    if (seen.has(c.id)) throw new Error(`duplicate conformance case id ${c.id}`);
    if (!c.id.startsWith(`S${c.section}-`)) throw new Error(`case ${c.id} is filed under §${c.section}`);
    seen.add(c.id);
  }
  return ALL.map((c, i) => ({ c, i }))
    .sort((a, b) => {
      const ka = sectionKey(a.c.section);
      const kb = sectionKey(b.c.section);
      for (let j = 0; j < Math.max(ka.length, kb.length); j++) {
        const d = (ka[j] ?? -1) - (kb[j] ?? -1);
        if (d !== 0) return d;
      }
      return a.i - b.i;
    })
    .map(({ c }) => c);
})();

function patternList(patterns: string | string[] | undefined): string[] {
  return (Array.isArray(patterns) ? patterns : patterns ? [patterns] : [])
    .flatMap((p) => p.split(','))
    .map((p) => p.trim())
    .filter(Boolean);
}

function globRegExp(p: string): RegExp {
  return new RegExp(
    `^${p
      .replace(/[.+^${}()|[\]\\]/g, '\\$&')
      .replace(/\*/g, '.*')
      .replace(/\?/g, '.')}$`,
  );
}

/** `*` matches any run of characters, `?` one; several patterns separated by commas. */
function globMatcher(patterns: string | string[] | undefined): ((id: string) => boolean) | undefined {
  const res = patternList(patterns).map(globRegExp);
  if (res.length === 0) return undefined;
  return (id) => res.some((re) => re.test(id));
}

/** The --only patterns that match no case of the profile (and whether a REFERENCE case matches). */
export function unmatchedPatterns(only: string | string[] | undefined, profile: Profile): Array<{ pattern: string; inReference: boolean }> {
  return patternList(only).flatMap((pattern) => {
    const re = globRegExp(pattern);
    const matching = CASES.filter((c) => re.test(c.id));
    if (matching.some((c) => profile === 'reference' || c.level === 'MUST')) return [];
    return [{ pattern, inReference: matching.length > 0 }];
  });
}

/** The cases a run executes: the profile's levels, then --only, then --skip. */
export function selectCases(opts: { profile: Profile; only?: string | string[]; skip?: string | string[] }): CaseDef[] {
  const only = globMatcher(opts.only);
  const skip = globMatcher(opts.skip);
  return CASES.filter((c) => (opts.profile === 'reference' || c.level === 'MUST') && (!only || only(c.id)) && !skip?.(c.id));
}
