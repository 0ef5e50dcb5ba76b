// D-79: what every command of the admin surface (`/admin/v1`) shares, so that each group (`keys`,
// `audit`, later `apps`, `members`, `usage`) is one small file: the signed-in client, answers checked
// against the admin contract, `--json` printing, durations, lists and the confirmation question.
import type { Command } from 'commander';
import type { z } from 'zod';
import { listOf } from '../src/contract/admin.ts';
import { type ApiResponse, InvalidResponseError, type ParleyClient } from './client.ts';
import { describeIssues, FollowedCursors } from './core/error.ts';
import { type Globals, refuseMistyped, type Session } from './context.ts';
import { oneLine, UsageError, withHint } from './io.ts';
import { canAsk, Prompter } from './prompt.ts';

/** D-79: the admin surface of a base URL: its origin + `/admin/v1` (docs/control-plane.md). */
export function adminUrlOf(baseUrl: string): string {
  return `${new URL(baseUrl).origin}/admin/v1`;
}

type Query = Record<string, string | number | undefined>;

/** The admin surface, as the member of the token: each call's answer checked against its contract schema. */
export class AdminClient {
  constructor(readonly http: ParleyClient) {}

  get<S extends z.ZodType>(path: string, schema: S, query?: Query): Promise<ApiResponse<z.infer<S>>> {
    return this.call('GET', path, schema, { query });
  }

  /**
   * D-173: every page of a list (the §4.2 shape), `last_id` as `after`, as one list whose `raw` is
   * that list (what `--json` prints). A server answering `has_more` with a cursor followed already
   * would loop forever: that is an InvalidResponseError.
   */
  async getAll<T extends { id: string }>(
    path: string,
    item: z.ZodType<T>,
  ): Promise<ApiResponse<{ object: 'list'; data: T[]; first_id: string | null; last_id: string | null; has_more: false }>> {
    const schema = listOf(item);
    const data: T[] = [];
    const followed = new FollowedCursors();
    for (let after: string | undefined; ; ) {
      const page = await this.get(path, schema, { after });
      data.push(...(page.data.data as T[]));
      const next = page.data.last_id;
      if (!page.data.has_more || next === null) {
        const list = {
          object: 'list' as const,
          data,
          first_id: data[0]?.id ?? null,
          last_id: data.at(-1)?.id ?? null,
          has_more: false as const,
        };
        return { ...page, data: list, raw: JSON.stringify(list) };
      }
      after = followed.follow(next, page.url);
    }
  }

  post<S extends z.ZodType>(path: string, schema: S, body: unknown = {}): Promise<ApiResponse<z.infer<S>>> {
    return this.call('POST', path, schema, { body });
  }

  put<S extends z.ZodType>(path: string, schema: S, body: unknown): Promise<ApiResponse<z.infer<S>>> {
    return this.call('PUT', path, schema, { body });
  }

  patch<S extends z.ZodType>(path: string, schema: S, body: unknown): Promise<ApiResponse<z.infer<S>>> {
    return this.call('PATCH', path, schema, { body });
  }

  delete<S extends z.ZodType>(path: string, schema: S): Promise<ApiResponse<z.infer<S>>> {
    return this.call('DELETE', path, schema, {});
  }

  async call<S extends z.ZodType>(
    method: string,
    path: string,
    schema: S,
    req: { query?: Query; body?: unknown; headers?: Record<string, string> },
  ): Promise<ApiResponse<z.infer<S>>> {
    const res = await this.http.request({ method, path, ...req });
    const parsed = schema.safeParse(res.data);
    if (!parsed.success)
      throw new InvalidResponseError(res.url, `the admin API's answer is not usable: ${describeIssues(parsed.error.issues)}`, res.raw);
    return { ...res, data: parsed.data };
  }
}

/**
 * The admin client of the command's settings. Without an admin login it is a usage error (exit 2)
 * whose hint is `parley admin login`; a mistyped token is refused before any request (D-70).
 */
export function adminClient(session: Session, cmd: Command): { admin: AdminClient; g: Globals } {
  const g = session.globals(cmd);
  // D-120: a scenario is the API's (/v1, /widget/v1); the control plane would not play it.
  if (Object.keys(g.scenarioHeaders).length > 0)
    throw new UsageError("--scenario and --test-id apply to the API's requests (/v1), not to the control plane's (/admin/v1)");
  if (!g.adminToken)
    throw withHint(
      new UsageError(`not signed in to the admin API (no admin token in profile ${g.profile}, no PARLEY_ADMIN_TOKEN)`),
      `parley admin login${g.profile === 'default' ? '' : ` --profile ${g.profile}`}`,
    );
  refuseMistyped(g.adminToken, 'the admin token');
  // D-153: a profile's token goes only to the server it was made on; another address signs in again.
  if (g.adminTokenServer !== undefined && new URL(g.adminTokenServer).origin !== new URL(g.baseUrl).origin)
    throw withHint(
      new UsageError(
        `the admin login of profile ${g.profile} is for ${g.adminTokenServer}, not ${g.baseUrl}: its token is not sent to another address`,
      ),
      `parley admin login${g.profile === 'default' ? '' : ` --profile ${g.profile}`} (the profile then follows ${g.baseUrl})`,
    );
  return { admin: new AdminClient(session.newClient(g, adminUrlOf(g.baseUrl), g.adminToken)), g };
}

/** `--json`: the API's answer exactly, on one line; otherwise the rendering. */
export function show(session: Session, g: Globals, res: ApiResponse<unknown>, render: () => string): void {
  if (g.json) session.out.line(oneLine(res.raw));
  else session.out.out(render());
}

/** Says on stderr how to get the next page of a list (the §4.2 shape). */
export function noteMore(session: Session, list: { has_more: boolean; last_id: string | null }): void {
  if (list.has_more && list.last_id) session.out.note(`more: add --after ${list.last_id} for the next page`);
}

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** A comma-separated option (`--events a,b`, `--origins x,y`): its items, trimmed, empty ones dropped. */
export function commaList(text: string): string[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** `90s`, `30m`, `24h`, `7d`, or plain seconds: a duration in seconds, or a usage error naming the option. */
export function parseDuration(text: string, option: string): number {
  const m = /^(\d{1,9})([smhd]?)$/.exec(text.trim());
  if (!m) throw new UsageError(`${option} must be a duration such as 30m, 24h or 7d (got ${JSON.stringify(text)})`);
  return Number(m[1]) * UNIT_SECONDS[m[2] || 's']!;
}

/**
 * A time for a query: a duration means that long ago (`--since 24h`); Unix seconds and ISO 8601
 * dates are passed as they are, for the server to check.
 */
export function parseSince(text: string, nowMs = Date.now()): string {
  if (/^\d{1,9}[smhd]$/.test(text.trim())) return String(Math.floor(nowMs / 1000) - parseDuration(text, 'a time'));
  return text;
}

/**
 * D-152: the app a team-wide listing (`usage`, `webhooks list`) is narrowed to: the `--app` flag only. The
 * profile's or PARLEY_APP_ID's app is a default for commands that act on one app; a listing of the team's
 * records narrowed by it would silently hide the other apps' records.
 */
export function narrowingApp(g: Globals): string | undefined {
  return g.appSource === '--app' ? g.app : undefined;
}

/**
 * A first day for a query by UTC day (`usage --since`): a duration means the day that long ago, as
 * `audit list --since 24h` means that long ago; a date is passed as it is, for the server to check.
 */
export function parseSinceDay(text: string, nowMs = Date.now()): string {
  if (!/^\d{1,9}[smhd]$/.test(text.trim())) return text;
  return new Date(nowMs - parseDuration(text, '--since') * 1000).toISOString().slice(0, 10);
}

/** Seconds in the largest unit that divides them (604800 → `7d`), as a duration flag is given. */
function durationText(seconds: number): string {
  for (const [unit, size] of [...Object.entries(UNIT_SECONDS)].reverse()) if (seconds % size === 0) return `${seconds / size}${unit}`;
  return `${seconds}s`;
}

/** A body field's flag; a duration flag (`--expires-in 8d`) has its bounds said in its own units, not in seconds. */
export type FlagOf = string | { flag: string; duration: true };

/**
 * A request body checked with the contract's own schema before it is sent: a refusal is exit 2 naming the
 * one flag at fault, found by the longest prefix of the issue's path that has one (`agent.model` is
 * `--model`, `widget.origins.0` is `--origins`).
 */
export function checkedBody<S extends z.ZodType>(schema: S, body: unknown, options: Record<string, FlagOf>): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0]!;
  const path = issue.path.map(String);
  let named: FlagOf | undefined;
  for (let n = path.length; n > 0 && named === undefined; n--) named = options[path.slice(0, n).join('.')];
  if (named === undefined) throw new UsageError(`${path.join('.')}: ${issue.message}`);
  if (typeof named === 'string') throw new UsageError(`${named}: ${issue.message}`);
  throw new UsageError(`${named.flag}: ${durationIssue(issue) ?? issue.message}`);
}

/** A bound of a duration in seconds, said as a duration (`must be at most 7d`); other issues as zod says them. */
function durationIssue(issue: z.core.$ZodIssue): string | undefined {
  if (issue.code === 'too_big' && typeof issue.maximum === 'number')
    return `must be at most ${durationText(issue.maximum)}${issue.inclusive === false ? ' (exclusive)' : ''}`;
  if (issue.code === 'too_small' && typeof issue.minimum === 'number')
    return `must be at least ${durationText(issue.minimum)}${issue.inclusive === false ? ' (exclusive)' : ''}`;
  return undefined;
}

/**
 * D-64 for the control plane: a person at a terminal confirms (`question` [y/N]); `--yes` or a script
 * (no terminal) goes ahead. Resolves whether to go on; a refusal is said on stderr as `kept`.
 */
export async function confirm(session: Session, yes: boolean | undefined, question: string, kept: string): Promise<boolean> {
  if (yes || !canAsk(session.io)) return true;
  const prompter = new Prompter(session.io.stdin, session.io.stderr);
  let answer: string;
  try {
    answer = await prompter.ask(`${question} [y/N] `);
  } finally {
    prompter.close();
  }
  if (/^y(es)?$/i.test(answer)) return true;
  session.out.note(kept);
  return false;
}
