// The run of `parley conformance client` (docs/client-kit.md): a Parley of its own (file store,
// loopback, scenarios on, a fresh data directory), then for each case a secret key made for it alone
// with the case's scenario script on it, the client's command run once with the case's variables, and
// the verdict from the client's last line, the key's test run and what the server holds. The results
// are the suite's RunResults, so that its reporters render them.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { startParley, type Parley } from '../../src/app.ts';
import { runApart } from '../apart.ts';
import { claimsOf } from '../capabilities.ts';
import type { CaseResult, RunResults } from '../results.ts';
import { newRunId } from '../run.ts';
import { SUITE_VERSION } from '../version.ts';
import { CLIENT_CASES, type ClientCase, type Evidence, type Judge, type SeenRequest } from './cases.ts';

const FIXTURES = path.resolve(import.meta.dirname, '../../fixtures');
const APPS = { demo: 'app_demo', genui: 'app_genui', knowledge: 'app_knowledge' } as const;
/** Conversations the list cases walk: more than a page of the largest size (§4.2: 100). */
const LISTED = 120;
/**
 * D-134: the requests a widget makes before its first message (its visitor session, the app's config,
 * the visitor's conversation): its publishable key's script plays them as they are, and the case's
 * steps begin after them.
 */
export const WIDGET_SETUP = 3;

export const KIT_NAME = 'parley-client-kit';

export interface KitOptions {
  /** The client's command, run by the shell once per case. */
  cmd: string;
  cases: ClientCase[];
  /** How long one run of the client may take before it is stopped and the case fails. */
  timeoutMs: number;
  runId?: string;
  onResult?: (r: CaseResult) => void;
  /** D-134: the client is a widget: the case's script is on a publishable key of its own, which the kit judges. */
  widget?: boolean;
}

interface Kit {
  parley: Parley;
  key: string;
  admin: Record<string, string>;
  /** Each app's widget origins, from the fixtures: a widget client's page is on the first (D-134). */
  origins: Record<string, string[]>;
}

/** A key the kit made for a case: its id and its text. */
interface Made {
  id: string;
  key: string;
}

async function api(kit: Kit, method: string, p: string, body?: unknown, admin = false): Promise<{ status: number; json: any }> {
  const base = admin ? kit.parley.baseUrl.replace(/\/v1$/, '/admin/v1') : kit.parley.baseUrl;
  const res = await fetch(`${base}${p}`, {
    method,
    headers: {
      ...(admin ? kit.admin : { authorization: `Bearer ${kit.key}` }),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json().catch(() => undefined) };
}

async function must(kit: Kit, what: string, method: string, p: string, body?: unknown, admin = false): Promise<any> {
  const r = await api(kit, method, p, body, admin);
  if (r.status !== 200) throw new Error(`the kit's own ${what} answered HTTP ${r.status}: ${JSON.stringify(r.json)}`);
  return r.json;
}

/** Every conversation id of `app`, in `order`, as the kit walks it with its own key. */
async function allIds(kit: Kit, app: string, order: string): Promise<Array<{ id: string; title: string | null }>> {
  const out: Array<{ id: string; title: string | null }> = [];
  for (let after = ''; ; ) {
    const page = await must(kit, 'list', 'GET', `/apps/${app}/conversations?limit=100&order=${order}${after ? `&after=${after}` : ''}`);
    out.push(...page.data);
    if (!page.has_more) return out;
    after = page.last_id;
  }
}

/** Runs the client's command with `vars`; its stdout and stderr, killed (its whole group) past the timeout. */
function runClient(
  cmd: string,
  vars: Record<string, string>,
  timeoutMs: number,
): Promise<{ stdout: string; stderr: string; code: number | null; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, { shell: true, detached: true, env: { ...process.env, ...vars }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
    child.stdin.end();
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {}
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ stdout, stderr, code, timedOut });
    });
  });
}

/** The client's result: the last line of its standard output, a JSON object. */
function lastObject(stdout: string): Record<string, unknown> | undefined {
  const line = stdout.trim().split('\n').at(-1);
  try {
    const v = JSON.parse(line ?? '');
    return v && typeof v === 'object' && !Array.isArray(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

function showRequests(rs: SeenRequest[]): string {
  return rs
    .map((r) => {
      const extra = [
        r.idempotency_key && `Idempotency-Key ${r.idempotency_key}`,
        r.last_event_id != null && `Last-Event-ID ${r.last_event_id}`,
        r.starting_after != null && `starting_after ${r.starting_after}`,
        r.retry_after_gap_ms != null && `${r.retry_after_gap_ms} ms after a Retry-After`,
      ].filter(Boolean);
      return `  +${r.at_ms - (rs[0]?.at_ms ?? 0)} ms ${r.method} ${r.path} [${r.step || 'as is'}] → ${r.status}${extra.length ? ` (${extra.join(', ')})` : ''}`;
    })
    .join('\n');
}

async function evidenceOf(
  kit: Kit,
  c: ClientCase,
  vars: Record<string, string>,
  output: Record<string, unknown>,
  keyId: string,
  before?: string[],
  setup = 0,
): Promise<Evidence> {
  const app = vars.PARLEY_APP_ID!;
  const run = await api(kit, 'GET', `/apps/${app}/test-runs/${keyId}`);
  // D-134: a widget's setup requests are before the case's steps, and not the case's.
  const requests: SeenRequest[] = run.status === 200 ? run.json.requests.filter((r: SeenRequest) => (r.step ?? 0) > setup) : [];
  const e: Evidence = { output, vars, requests, before };
  if (typeof output.response_id === 'string') {
    const r = await api(kit, 'GET', `/apps/${app}/responses/${encodeURIComponent(output.response_id)}`);
    if (r.status === 200) e.truth = r.json;
  }
  if (c.task === 'complete')
    e.completion = (await must(kit, 'completion', 'POST', `/apps/${app}/completions`, { prompt: vars.PARLEY_PROMPT })).text;
  if (c.task === 'create-conversation') e.titled = (await allIds(kit, app, 'desc')).filter((x) => x.title === vars.PARLEY_TITLE).length;
  return e;
}

/** The case's variables (docs/client-kit.md), and what it made beforehand. */
async function varsOf(kit: Kit, c: ClientCase, runId: string, key: string, widget?: Made): Promise<Record<string, string>> {
  const app = APPS[c.app];
  const vars: Record<string, string> = {
    PARLEY_BASE_URL: kit.parley.baseUrl,
    PARLEY_API_KEY: key,
    PARLEY_APP_ID: app,
    PARLEY_TASK: c.task,
    PARLEY_TITLE: `client kit ${runId} ${c.id}`,
    PARLEY_MESSAGE: c.message ?? 'Hello',
    PARLEY_PROMPT: 'Say hello',
    PARLEY_ORDER: c.order ?? 'desc',
    ...(widget ? { PARLEY_PUBLISHABLE_KEY: widget.key, PARLEY_WIDGET_ORIGIN: kit.origins[app]?.[0] ?? '' } : {}),
  };
  if (c.task === 'send-stream' || c.task === 'send-json' || c.task === 'cancel')
    vars.PARLEY_CONVERSATION_ID = (await must(kit, 'create', 'POST', `/apps/${app}/conversations`, { title: `client kit ${c.id}` })).id;
  return vars;
}

/** D-125: when the walk's second page has been answered 503, three conversations are added before it is asked again. */
async function growDuring(kit: Kit, app: string, keyId: string, done: { v: boolean }): Promise<void> {
  while (!done.v) {
    const run = await api(kit, 'GET', `/apps/${app}/test-runs/${keyId}`);
    if (run.status === 200 && run.json.requests.some((r: SeenRequest) => r.status === 503)) {
      for (let i = 0; i < 3; i++) await must(kit, 'create', 'POST', `/apps/${app}/conversations`, { title: 'client kit: added mid-walk' });
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

function verdict(c: ClientCase, level: 'MUST' | 'SHOULD', judges: Judge[], e: Evidence, evidence: string, ms: number): CaseResult {
  const failed = judges.map((j) => j(e)).filter((m): m is string => m !== undefined);
  return {
    id: level === 'MUST' ? c.id : `${c.id}/should`,
    section: 'client',
    level,
    description: level === 'MUST' ? c.description : `${c.description}: as a resilient client does`,
    status: failed.length ? 'failed' : 'passed',
    ...(failed.length ? { failure: { message: failed.join('; '), response: evidence } } : {}),
    ms,
  } as CaseResult;
}

async function runCase(kit: Kit, c: ClientCase, o: KitOptions, runId: string): Promise<CaseResult[]> {
  const started = Date.now();
  const made: Made = await must(kit, 'key', 'POST', '/keys', { type: 'secret', name: `client kit ${c.id}` }, true);
  const widget: Made | undefined = o.widget
    ? await must(kit, 'key', 'POST', '/keys', { type: 'publishable', name: `client kit ${c.id} widget` }, true)
    : undefined;
  // D-134: a widget client's requests are judged by its publishable key, whose script lets its setup pass first.
  const judged = widget ?? made;
  const setup = widget ? WIDGET_SETUP : 0;
  try {
    await must(kit, 'scenario', 'PUT', `/keys/${judged.id}/scenario`, { script: [...Array(setup).fill(''), ...c.script] }, true);
    const vars = await varsOf(kit, c, runId, made.key, widget);
    const before = c.task === 'list-all' ? (await allIds(kit, vars.PARLEY_APP_ID!, vars.PARLEY_ORDER!)).map((x) => x.id) : undefined;
    const done = { v: false };
    const growing = c.grow ? growDuring(kit, vars.PARLEY_APP_ID!, judged.id, done) : undefined;
    const ran = await runClient(o.cmd, vars, o.timeoutMs);
    done.v = true;
    await growing;
    const output = lastObject(ran.stdout);
    const ms = Date.now() - started;
    const base = { id: c.id, section: 'client', level: 'MUST' as const, description: c.description, ms };
    if (output?.unsupported === true) return [{ ...base, status: 'skipped', reason: `the client does not do ${c.task}` } as CaseResult];
    const e = await evidenceOf(kit, c, vars, output ?? {}, judged.id, before, setup);
    const evidence = [
      `scenario script on the ${widget ? `publishable key, after ${setup} empty steps for the widget's setup` : 'key'}: ${JSON.stringify(c.script)}`,
      `requests the kit received:\n${showRequests(e.requests)}`,
      `the client printed: ${output ? JSON.stringify(output) : `(no JSON object as its last line; exit ${ran.code}${ran.timedOut ? `, stopped after ${o.timeoutMs} ms` : ''})`}`,
      ...(ran.stderr.trim() ? [`its stderr ends: ${ran.stderr.trim().slice(-600)}`] : []),
    ].join('\n');
    if (!output)
      return [
        {
          ...base,
          status: 'failed',
          failure: { message: 'the client printed no JSON object as its last line', response: evidence },
        } as CaseResult,
      ];
    return [verdict(c, 'MUST', c.must, e, evidence, ms), ...(c.should ? [verdict(c, 'SHOULD', c.should, e, evidence, ms)] : [])];
  } finally {
    for (const k of widget ? [made, widget] : [made]) await api(kit, 'POST', `/keys/${k.id}/revoke`, {}, true);
  }
}

/** Starts the kit's Parley, runs the cases one after another, and stops it. */
export async function runClientKit(o: KitOptions): Promise<RunResults> {
  const started = Date.now();
  const runId = o.runId ?? newRunId();
  const target = JSON.parse(await fs.readFile(path.join(FIXTURES, 'target.json'), 'utf8'));
  const fixtures = JSON.parse(await fs.readFile(path.join(FIXTURES, 'fixtures.json'), 'utf8')) as {
    apps: Array<{ id: string; widget?: { origins: string[] } }>;
  };
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'parley-client-kit-'));
  const parley = await startParley({ host: '127.0.0.1', port: 0, dataDir, fixturesDir: FIXTURES, logger: pino({ level: 'silent' }) });
  const results: CaseResult[] = [];
  try {
    const signIn = await fetch(parley.baseUrl.replace(/\/v1$/, '/admin/v1/sessions'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: target.admin.email, password: target.admin.password }),
    });
    const cookie = signIn.headers.getSetCookie().find((c) => c.startsWith('parley_session='))!;
    const kit: Kit = {
      parley,
      key: target.api_key,
      admin: { cookie: cookie.split(';')[0]!, 'x-csrf-token': ((await signIn.json()) as { csrf_token: string }).csrf_token },
      origins: Object.fromEntries(fixtures.apps.map((a) => [a.id, a.widget?.origins ?? []])),
    };
    if (o.cases.some((c) => c.task === 'list-all'))
      for (let i = 0; i < LISTED; i++)
        await must(kit, 'create', 'POST', '/apps/app_demo/conversations', { title: `client kit listed ${i}` });
    for (const c of o.cases) {
      for (const r of await runCase(kit, c, o, runId)) {
        results.push(r);
        o.onResult?.(r);
      }
    }
  } finally {
    await parley.close();
    await fs.rm(dataDir, { recursive: true, force: true });
  }
  const header = { subject: 'client' as const, suite: { name: KIT_NAME, version: SUITE_VERSION }, interfaceVersion: '1.0.0' };
  return runApart(
    { ...header, profile: 'client-1.0.0', runId, baseUrl: o.cmd, appId: APPS.demo },
    results,
    started,
    0,
    claimsOf([], { widget: false, admin: false }),
  );
}

/** Exit code: 1 when a MUST case failed (or, strict, any case), else 0. */
export function kitExitCode(run: RunResults, strict: boolean): 0 | 1 {
  return run.results.some((r) => (r.status === 'failed' || r.status === 'errored') && (strict || r.level === 'MUST')) ? 1 : 0;
}

export { CLIENT_CASES };
