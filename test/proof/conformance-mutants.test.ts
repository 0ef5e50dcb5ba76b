// Proves the conformance suite: each broken implementation of test/support/mutants.ts (a loopback proxy in
// front of a fresh reference server) makes the suite fail with the case that should catch it, for
// the reason it should; what breaks only a D-n decision, and what the interface leaves open (the
// variants), passes profile spec.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { CASES, PreflightError, runConformance, selectCases, type Profile, type RunResults } from '../../conformance/run.ts';
import { parseTarget, UsageError, type Target } from '../../conformance/target.ts';
import { FIXTURES_DIR, startTestServer } from '../support/helpers.ts';
import { composeHooks, startMutantProxy, type MutantHooks } from '../support/mutant-proxy.ts';
import { MUTANTS, VARIANTS } from '../support/mutants.ts';

const targetJson = JSON.parse(await fs.readFile(path.join(FIXTURES_DIR, 'target.json'), 'utf8'));

/**
 * The caught-by case's whole section runs, not the case alone: cases of a section share their
 * preconditions, so a mutant that breaks one on the way shows it. §8 runs by limit (S8-metadata-*,
 * S8-prompt-*, …): its cases share nothing across limits, and each limit's run is costly.
 */
const sectionOf = (caseId: string) =>
  caseId.startsWith('S8-') ? caseId.replace(/^(S8-[a-z]+)-.*$/, '$1-*') : caseId.replace(/^(S[\d.]+)-.*$/, '$1-*');

async function runAgainst(
  hooks: MutantHooks,
  opts: { profile: Profile; only?: string; timeoutMs?: number; settleTimeoutMs?: number; repeat?: number; basePath?: string },
): Promise<RunResults> {
  // D-85: a first retry well within the runs' 10 s settle timeout, as docs/conformance.md#webhooks advises
  // (the default 5 s is too, but not always on a loaded machine).
  const server = await startTestServer({ webhookRetrySchedule: [0.5, 1, 2] });
  // The slow app's replies are cancelled or left mid-stream: they go through as they come.
  const proxy = await startMutantProxy(server.baseUrl, hooks, opts.basePath, {
    passThrough: (req) => req.path.startsWith(`/apps/${targetJson.apps.slow}/`),
  });
  try {
    const target: Target = parseTarget(targetJson, { baseUrl: proxy.baseUrl });
    // A mutant's 429 is judged as it comes (Retry-After waits are proven in test/conformance-ci.test.ts).
    return await runConformance({
      target,
      profile: opts.profile,
      only: opts.only,
      repeat: opts.repeat,
      timeoutMs: opts.timeoutMs ?? 10_000,
      settleTimeoutMs: opts.settleTimeoutMs ?? 10_000,
      handleSignals: false,
      maxRetryWaitMs: 0,
    });
  } finally {
    await proxy.close();
    await server.close();
  }
}

function failures(r: RunResults): string[] {
  return r.results.filter((c) => c.status === 'failed' || c.status === 'errored').map((c) => `${c.id}: ${c.failure?.message ?? c.reason}`);
}

const caught: string[] = [];
const allowed = new Set<string>();
describe('each broken implementation is caught by its case, for its reason', { concurrency: 4 }, () => {
  for (const m of MUTANTS) {
    // A mutant whose limit outlives a run is passed by profile spec run twice, which waits out its window (D-109).
    test(`${m.id}: ${m.breaks} (${m.section}) → ${m.caughtBy} (${m.profile})`, { timeout: m.repeat ? 240_000 : 90_000 }, async () => {
      const only = sectionOf(m.caughtBy);
      const r = await runAgainst(m.hooks(), {
        profile: m.profile,
        only,
        timeoutMs: m.timeoutMs,
        settleTimeoutMs: m.settleTimeoutMs,
        basePath: m.basePath,
      }).catch((err: unknown) => err as Error);
      if (r instanceof UsageError || r instanceof PreflightError) {
        // Refused before any case (a base URL that does not end in /v1): the run exits 2, for this reason.
        assert.match(r.message, m.because, `the preflight refused ${m.id} for another reason`);
        caught.push(m.id);
        return;
      }
      if (r instanceof Error) throw r;
      const result = r.results.find((c) => c.id === m.caughtBy);
      assert.ok(result, `case ${m.caughtBy} did not run`);
      // Errored: blocked by a precondition that another case of the section ran and failed; that failure is the reason.
      // Flaky (failed, then passed when run again): a kill too, for the reason of its failure.
      const message =
        result.status === 'errored' ? r.preconditions.find((p) => p.name === result.blockedBy)?.message : result.failure?.message;
      assert.ok(
        result.status === 'failed' || result.status === 'errored' || result.status === 'flaky',
        `${m.caughtBy} ${result.status} against ${m.id}`,
      );
      assert.match(message ?? '', m.because, `${m.caughtBy} failed against ${m.id} for another reason`);
      caught.push(m.id);
      // It breaks only a decision: the interface allows it, so profile spec must pass it (a fresh
      // proxy). Where its section has no MUST case, the combined run below is the proof.
      if (m.profile !== 'reference' || selectCases({ profile: 'spec', only }).length === 0) return;
      const spec = await runAgainst(m.hooks(), {
        profile: 'spec',
        only,
        timeoutMs: m.timeoutMs,
        settleTimeoutMs: m.settleTimeoutMs,
        repeat: m.repeat,
        basePath: m.basePath,
      });
      assert.deepEqual(failures(spec), [], `${m.id} breaks only ${m.section}, yet profile spec fails it`);
      allowed.add(m.id);
    });
  }
});

describe('what the interface allows passes profile spec', () => {
  // A hook that rewrites the bytes of a stream into CR LF goes last: the others edit parsed events or LF text.
  const crlfLast = (a: { id: string }, b: { id: string }) => Number(a.id === 'sse-crlf-comments') - Number(b.id === 'sse-crlf-comments');
  const together = VARIANTS.filter((v) => !v.alone);

  test('every reference-level mutant and every variant at once: the whole spec profile, twice in a row', { timeout: 300_000 }, async () => {
    const mutants = MUTANTS.filter((m) => m.profile === 'reference' && !m.alone);
    // The second run's rate-limit case waits for the window the first one used (a minute, D-109).
    const r = await runAgainst(composeHooks([...mutants, ...together].sort(crlfLast).map((m) => m.hooks())), {
      profile: 'spec',
      repeat: 2,
      settleTimeoutMs: 75_000,
    });
    assert.deepEqual(failures(r), []);
    assert.equal(r.summary.skipped, 0);
    for (const m of [...mutants, ...together]) allowed.add(m.id);
  });

  test('every variant that no decision fixes, at once: the whole reference profile', { timeout: 180_000 }, async () => {
    const r = await runAgainst(composeHooks(together.filter((v) => !v.decision).map((v) => v.hooks())), { profile: 'reference' });
    assert.deepEqual(failures(r), []);
  });

  for (const v of VARIANTS.filter((x) => x.decision)) {
    test(`${v.id} departs from ${v.decision!.id} only: profile reference catches it in ${v.decision!.caughtBy}, for its reason`, {
      timeout: 90_000,
    }, async () => {
      const r = await runAgainst(v.hooks(), { profile: 'reference', only: sectionOf(v.decision!.caughtBy) });
      const result = r.results.find((c) => c.id === v.decision!.caughtBy);
      assert.equal(result?.status, 'failed', `${v.decision!.caughtBy} ${result?.status} against ${v.id}`);
      assert.match(result!.failure!.message, v.decision!.because);
    });
  }

  for (const v of VARIANTS.filter((x) => x.alone)) {
    const a = v.alone!;
    test(`${v.id}: passes with --timeout ${a.timeoutMs} and --settle-timeout ${a.settleTimeoutMs}${a.failsWithin ? `, fails with --settle-timeout ${a.failsWithin}` : ''}`, {
      timeout: 120_000,
    }, async () => {
      for (const profile of v.decision ? (['spec'] as const) : (['spec', 'reference'] as const)) {
        const r = await runAgainst(v.hooks(), { profile, only: a.only, timeoutMs: a.timeoutMs, settleTimeoutMs: a.settleTimeoutMs });
        assert.deepEqual(failures(r), [], `profile ${profile}`);
      }
      allowed.add(v.id);
      if (a.failsWithin) {
        // The settle timeout is what lets it pass: shorter than the lag, the same run fails.
        const r = await runAgainst(v.hooks(), { profile: 'spec', only: a.only, timeoutMs: a.timeoutMs, settleTimeoutMs: a.failsWithin });
        assert.ok(r.summary.failed > 0, 'a settle timeout shorter than the lag passed too');
      }
    });
  }
});

after(() => {
  // Reported in the test output and in docs/conformance-reference.md.
  console.log(
    `conformance mutants: ${caught.length} of ${MUTANTS.length} broken implementations caught by the case that should catch them, for the reason it should; ` +
      `${allowed.size} of ${MUTANTS.filter((m) => m.profile === 'reference').length + VARIANTS.length} reference-level mutants and variants pass profile spec`,
  );
});

test('the broken implementations span every section of the interface, each labelled by what it breaks', () => {
  assert.ok(MUTANTS.length >= 40, `only ${MUTANTS.length} mutants`);
  const sections = new Set(MUTANTS.map((m) => m.section.replace(/^(\d+)\..*$/, '$1')));
  for (const s of ['1', '3', '4', '5', '6', '7', '8', '9']) assert.ok(sections.has(s), `no mutant for §${s}`);
  assert.equal(new Set([...MUTANTS, ...VARIANTS].map((m) => m.id)).size, MUTANTS.length + VARIANTS.length, 'mutant ids are unique');
  for (const m of MUTANTS) {
    // A decision is judged only by profile reference; an interface rule by a MUST case.
    assert.equal(m.profile === 'reference', /^D-\d+$/.test(m.section), `${m.id}: profile ${m.profile} for section ${m.section}`);
    const c = CASES.find((x) => x.id === m.caughtBy);
    assert.ok(c, `${m.id}: no case ${m.caughtBy}`);
    if (m.profile === 'spec') assert.equal(c.level, 'MUST', `${m.id} breaks the interface but ${m.caughtBy} is not a MUST case`);
  }
});
