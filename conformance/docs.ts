// Generates docs/conformance.md from the case registry and the list of broken implementations that
// prove the suite: `npm run conformance:docs`. A test fails when the committed file is stale.
import fs from 'node:fs/promises';
import path from 'node:path';
import { MUTANTS, VARIANTS } from '../test/support/mutants.ts';
import { clauseMatrix, matrixSummary, type MatrixRow } from './clauses.ts';
import { CASES, sectionTitle } from './registry.ts';

const INTRO = `# Conformance suite

The conformance suite judges any implementation of the interface
(\`interface.md\`, version 1.0.0) and tells, case by case, what it does not
do as the interface says. It runs against a live server over HTTP, so the implementation can be written
in any language. The reference server (\`npm start\`) passes every case in both profiles.

## Running it

\`\`\`sh
npm ci
npm run conformance -- --target my-target.json              # or: parley conformance --target my-target.json
\`\`\`

Options:

| option | meaning |
|---|---|
| \`--target FILE\` | the target file (below); required |
| \`--base-url URL\` | overrides the target's \`base_url\` (it must end in \`/v1\`) |
| \`--api-key KEY\` | overrides the target's \`api_key\` (keeps the key out of files) |
| \`--profile spec\\|reference\` | \`spec\` (default): only what the interface states. \`reference\`: also the project's decisions D-1…D-24 |
| \`--only GLOB\`, \`--skip GLOB\` | select cases by id; \`*\` and \`?\`, comma-separated or repeated: \`--only 'S4.2-*,S6-*'\`. An \`--only\` pattern that matches no case of the profile is a usage error (exit 2), so that a typo cannot pass |
| \`--reporter pretty\\|json\\|junit\\|tap\` | report format (default \`pretty\`) |
| \`--out FILE\` | writes the report there; stdout still shows progress, failures and the summary |
| \`--timeout MS\` | per request: time to the response headers and longest silence inside a body (default 30000); a stream may take 4× that in total, a case 20× |
| \`--settle-timeout MS\` | how long a case reads again what the interface lets an implementation settle after it answered: the generated title, aggregated metrics (default 30000). Separate from \`--timeout\`, so a fast server can be judged with short request timeouts and slow aggregates |
| \`--bail\` | stops at the first failure (the rest are reported as skipped) |
| \`--repeat N\` | runs the selection N times; a case passes only if it passed every time (to catch flakiness): failed in any run is failed, skipped in any run is skipped |
| \`--list\` | lists the selected cases (with the target keys they need) and exits |

Exit codes: **0** no case failed, **1** at least one case failed (or the run was interrupted), **2** usage
error (bad option, unreadable or invalid target file, an \`--only\` that matches nothing) or the target is
unreachable. Judge a run by its exit code. After a run (exit 0 or 1) the last line of stdout is
\`conformance: N passed, N failed, N skipped\`; after \`--list\` it is \`conformance: N cases (profile …)\`.
A usage error prints its reason on stderr: stdout is empty when the options or the target file are wrong,
and ends with \`conformance: 0 passed, 0 failed, 0 skipped\` when the target was read but the run could not
start (unreachable, \`--only\` matching nothing). With \`--reporter json|junit|tap\` and no \`--out\`, the
report is printed and the summary line follows it, so machine consumers should use \`--out\`.

Ctrl-C (SIGINT) or SIGTERM during a run stops it: the case under way is reported failed as interrupted, the
rest skipped, what the run created is deleted, and the summary line is printed (exit 1). A second Ctrl-C
ends the process at once, without the cleanup.

As a library: \`runConformance(options)\` from \`conformance/run.ts\` returns the results that the reporters
render (\`render(results, 'junit')\`).

### The target file

What the suite needs to know about your implementation: its address, a secret key and the apps to use
(the full description is in \`target.md\` of the specification). The reference server's own target is
\`fixtures/target.json\`:

\`\`\`json
${'${TARGET}'}
\`\`\`

\`base_url\`, \`api_key\` and \`app_id\` are required. \`app_id\` is an active app with an agent, with generative UI
and the streaming default off. Each key of \`apps\`, \`publishable_key\` and \`other_team_api_key\` (a secret key of
the team that owns \`apps.other_team\`: the suite creates one conversation with it, checks that \`api_key\` cannot
reach it under any path, and deletes it with that key) is optional: the cases that need a missing one are
**skipped** (listed with the key they need) and never counted as passed. \`app_id\` and
every app but \`rate_limited\` must allow at least 3,000 send-message/completion requests a minute.

### Profiles and levels

Each case has a level. **MUST** cases check what the interface states and run in both profiles. Where the
interface requires an error but does not say which (a malformed body, a value out of range), a MUST case
accepts any 4xx with a valid error object. **REFERENCE** cases check a project decision (D-n in
\`decisions.md\`: exact error codes and params, \`sequence_number\`, pagination of \`before\` in desc order, …)
and run only with \`--profile reference\`. A spec-profile run never fails an implementation for a choice the
interface leaves open. A few cases cannot judge every implementation: when the agent emits no function call
or no \`data_spec\` in reply to the probe message, the case is skipped with that reason.

### How the suite reads the interface

Where the interface can be read more than one way, profile spec takes the reading that fails nobody who
follows the text, and the project's decision is checked in profile reference only:

| question | profile spec | profile reference |
|---|---|---|
| order of conversations created in the same second (§4.2 orders "by creation time"; created_at counts seconds) | any order the implementation keeps from one request to the next: the run creates its conversations in two halves more than a second apart, learns the implementation's order from the whole list (pages of 100), checks it against created_at and the halves, and judges the walks, pages and cursors against it | creation order (D-7) |
| \`after\` in desc order: §4.2 says both "returns conversations created after it" and "to get the next page, pass \`last_id\` as \`after\`" | the next page (a MUST): the default order is desc, and under the literal reading the documented way to page would loop back to newer conversations; "forward cursor" reads as forward in the list's order | the same (D-12) |
| \`before\` in asc order: which conversations "created before it" a page of \`limit\` holds | only conversations created before the cursor, oldest first; where only two precede it, exactly those two (either reading agrees) | the page just before the cursor (D-12); \`before\` in desc order is D-12 only |
| an unknown conversation id (§2.10 does not show the id format) | the id is derived from a real one of the run (same length, same kind of character at each place), so an implementation that refuses malformed ids still sees a well-formed one, and §7's \`404 not_found\` is required | the same |
| the generated title "after the first exchange", the "aggregated" metrics | read again until they show or \`--settle-timeout\` passes (not the request timeout); a change that must not count (a completion, a deletion) is judged once a creation after it is counted | the same: D-8 and D-24 fix what, not when |
| "16KB maximum" metadata (§8): how 16KB is counted is not shown | a size in bytes of the metadata's JSON, with margins: 15,872 bytes (16,000 less 128 for the spaces a serializer may put after \`:\` and \`,\`) pass, 16,896 bytes (16 KiB and 512 more) are refused, ASCII and two-byte characters alike | 16,384 bytes of compact JSON pass, 16,385 are refused (D-9) |
| an app that does not exist: "a valid key without access to the app" (§5.6, 403 \`access_denied\`) and "app not found" (§7, 404 \`not_found\`) both describe it | either | 404 (D-4) |
| a made-up conversation id on another team's, a disabled or an agentless app: the app's condition and "conversation not found" both hold, and the order of the checks is not shown | the app's error (403) or 404 \`not_found\`; with a real conversation of that app, only the app's error | the app's error (D-4) |
| "app_inactive: App is disabled" (§7) names no endpoint | every app-scoped path of a disabled app answers 403 \`app_inactive\`, reads included | the same (D-4) |
| SSE fields other than \`event\` and \`data\` (\`id:\`, \`retry:\`) | allowed: §1 and §6 name the format SSE, and those fields set the stream's last event id and reconnection time without changing any event's type or data, the two lines §6 describes | exactly the two lines (D-16, D-18) |
| a \`message\` output item whose \`content\` is null (§2.4: "array of objects or null") | allowed: it carries no content, so no text event and no history item are asked of it | the persisted items are exactly the output (D-14) |
| the history of a new conversation: "the complete history of messages and function calls" (§4.3) does not say it starts empty | whatever a new conversation holds (an agent's greeting) is the base that each exchange adds to, in order | empty (D-14) |
| items of a conversation: "fields of each item: not shown" | the user's message, each reply message's text and each function call's id are looked for in the items' JSON, in order | D-14's item shape |
| \`name\`, \`arguments\`, \`call_id\` of a function call: "string or null" (§2.4) | null allowed; arguments, when given, are JSON | named, with an id, \`knowledge_search {"query"}\` (D-16, D-21) |
| which endpoints are rate-limited (§8: send message is; others not shown) | a 429 \`rate_limit_exceeded\` already on creating the conversation the case needs counts as the limit enforced (so repeated runs within a minute pass) | only send message and completions count (D-23) |
| "each event is two lines" (§6) | a MUST: \`event: <type>\` then one \`data: <json>\` line per event; CR LF, comment lines (\`: keep-alive\`) and no space after the colon are allowed, as for any SSE client | exactly those bytes, LF only (D-16, D-18) |
| "only the custom title can be updated" (§4.4) | a PATCH with title and metadata is refused with a 4xx error object or leaves metadata as it was | 400 \`unknown_parameter\`, nothing changed (D-13) |
| rule 4: "the same content" in JSON mode | the same message in JSON and in a stream gives the same kinds of output items (messages, function calls, data_spec), in up to 3 tries for an agent that varies | the same |

### What a run does to your implementation

Cases run one after another. A negative case starts from a request that passed earlier in the same run and
changes one thing. Every conversation a run creates carries the run's id (\`external_user_id\`
\`conformance-<run id>\` and/or \`metadata.conformance_run\`), and all of them are deleted at the end (soft
delete, as §4.5 defines it); the one created from an empty body \`{}\` carries no tag, so its case deletes
it at once. A run sends about 540 requests: it creates up to ~135 conversations (most of them for the
list-limit cases when the app is empty; one on \`apps.other_team\` with \`other_team_api_key\`, deleted with that
key), sends about 80 messages and 35 completions (refused ones included), pauses once for a little more than a second (between the
two halves of the list cases' conversations), and the rate-limit case sends messages to \`apps.rate_limited\`
until it is refused (at most 100), which uses up that app's minute: a run within the next minute meets the
429 at once, and passes.

The list and metrics cases assume that nothing else writes to \`app_id\` during the run: the list cases
need the run's conversations to be the newest of the app and compare pages with the whole list read earlier
in the run, and the metrics cases count the changes they make themselves. Run the suite against an app of
its own, one run at a time.

### What it cannot check

\`500 internal_error\` (no request can provoke it on a healthy server), outbound webhooks and their signatures,
the dashboard, and what a model says (only the shape and agreement of what it returns). Function calls and
\`data_spec\` are probed with fixed messages ("What does your knowledge base say about resetting a password?"
on \`apps.knowledge_base\`, "I would like to book an appointment. Please show me the booking form." on
\`apps.generative_ui\`); an agent that answers them without a tool call or a form makes those cases skip,
with that reason.

### Reading a failure

Each failure names the case, its level and section, what was expected, the request that showed it as a
curl command (keys replaced by \`$API_KEY\` / \`$PUBLISHABLE_KEY\`, long bodies shortened) and what came back:

\`\`\`
✗ S4.2-list-after-walk-desc [MUST, §4.2 List conversations]
    conversation conv_… was seen twice during the desc walk
    sent:
      curl -sS -X GET 'http://127.0.0.1:8787/v1/apps/app_demo/conversations?order=desc&limit=2&after=conv_…' -H "authorization: Bearer $API_KEY"
    got:
      HTTP 200
      content-type: application/json; charset=utf-8

      {"object":"list","data":[…],"first_id":"conv_…","last_id":"conv_…","has_more":true}
\`\`\`

### In CI

\`\`\`yaml
# .github/workflows/conformance.yml
jobs:
  conformance:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
        with: { repository: our-org/parley, path: parley }
      - uses: actions/setup-node@v4
        with: { node-version: 20 }
      - run: ./start-my-implementation.sh &          # your server, listening on :8080
      - run: timeout 60 sh -c 'until curl -s -o /dev/null http://127.0.0.1:8080/v1; do sleep 1; done'
      - run: cd parley && npm ci
      - run: >
          cd parley && npm run conformance --
          --target ../conformance-target.json --base-url http://127.0.0.1:8080/v1
          --api-key "$API_KEY" --reporter junit --out ../conformance.xml
        env: { API_KEY: "\${{ secrets.CONFORMANCE_API_KEY }}" }
      - uses: actions/upload-artifact@v4
        if: always()
        with: { name: conformance, path: conformance.xml }
\`\`\`

## How the suite is proven

\`npm run test:proof\` (the long-proof tier) runs the suite against the reference server in both profiles
(every case passes, none is skipped), then against ${'${MUTANT_COUNT}'} deliberately broken implementations: a loopback proxy in front of the reference
server that breaks one rule each. For each, the section of the case that should catch it runs (cases of a
section share their preconditions, so interactions show; for §8, the cases of that limit), and that case must fail **for the reason it
should**: its failure message must match a pattern that names the defect, not a side effect of it. All
${'${MUTANT_COUNT}'} are caught so.

A mutant of profile reference breaks only a decision, which the interface allows: profile spec must pass it.
Each one's section runs in profile spec, and all of them together, with the variants below, run through the
whole spec profile twice in a row (but ${'${ALONE}'}).

${'${MUTANTS}'}

The variants do what the interface leaves open otherwise than the reference does. Profile spec must pass
all of them (together, through the whole profile, with the reference-level mutants). Profile reference must
pass those that no decision fixes, and catch each of the others in the case of the decision it departs from,
for its reason:

${'${VARIANTS}'}

This page is generated from the case registry and the list of mutants: \`npm run conformance:docs\` writes
it, \`npm run conformance:docs -- --check\` exits 1 when it is stale (\`npm test\` checks it too).
`;

export function generateDocs(targetJson = TARGET_JSON): string {
  const cases: string[] = ['## Cases', '', `${CASES.length} cases: ${CASES.filter((c) => c.level === 'MUST').length} MUST, ${CASES.filter((c) => c.level === 'REFERENCE').length} REFERENCE.`, ''];
  let section = '';
  for (const c of CASES) {
    if (c.section !== section) {
      section = c.section;
      cases.push('', `### ${sectionTitle(section)}`, '', '| id | level | needs | checks | clauses |', '|---|---|---|---|---|');
    }
    cases.push(`| \`${c.id}\` | ${c.level} | ${(c.needs ?? []).map((n) => `\`${n}\``).join(', ')} | ${c.description.replace(/\|/g, '\\|')} | ${clauseList(c.clauses)} |`);
  }
  const where = (section: string) => (/^D-/.test(section) ? section : `§${section}`);
  const matrix = renderMatrix(clauseMatrix());
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  const mutants = ['| broken implementation | breaks | profile | caught by |', '|---|---|---|---|', ...MUTANTS.map((m) => `| \`${m.id}\` | ${cell(m.breaks)} (${where(m.section)}) | ${m.profile} | \`${m.caughtBy}\` |`)].join('\n');
  const variants = [
    '| variant | does | open in | departs from (caught in profile reference by) |',
    '|---|---|---|---|',
    ...VARIANTS.map((v) => `| \`${v.id}\` | ${cell(v.does)} | ${v.section.split(', ').map(where).join(', ')} | ${v.decision ? `${v.decision.id} (\`${v.decision.caughtBy}\`)` : v.alone ? `none; run alone with \`--timeout ${v.alone.timeoutMs} --settle-timeout ${v.alone.settleTimeoutMs}\`` : 'none'} |`),
  ].join('\n');
  return (
    INTRO.replace('${TARGET}', targetJson.trim())
      .replaceAll('${MUTANT_COUNT}', String(MUTANTS.length))
      .replace('${MUTANTS}', mutants)
      .replace('${VARIANTS}', variants)
      .replace('${ALONE}', MUTANTS.filter((m) => m.alone).map((m) => `\`${m.id}\`: ${m.alone}`).join('; ')) +
    '\n' +
    matrix +
    '\n\n' +
    cases.join('\n') +
    '\n'
  );
}

/** A case's clauses, the per-endpoint rows of one group folded into one entry (`§5.6.missing-key@{create, list, …}`). */
function clauseList(ids: readonly string[]): string {
  const groups = new Map<string, string[]>();
  for (const id of ids) {
    const [head, endpoint] = id.split('@');
    groups.set(head!, [...(groups.get(head!) ?? []), ...(endpoint ? [endpoint] : [])]);
  }
  return [...groups].map(([head, eps]) => (eps.length ? `${head}@{${eps.join(', ')}}` : head)).join(', ');
}

const CHECK_SHOWN = { exact: 'exactly', weak: 'weakly', none: 'not checkable' } as const;

/** The clause → case matrix, by section: each clause, how it is checked (and why not exactly), and its cases. */
export function renderMatrix(rows: readonly MatrixRow[]): string {
  const m = matrixSummary(rows);
  const out = [
    '## Clause matrix',
    '',
    `The suite numbers the clauses of the interface itself (\`conformance/interface-clauses.ts\`): every field and its default,`,
    'every MUST-like sentence, every row of every table (the errors of §5.6 and §7 once per endpoint, and once more with',
    '`stream: true` where the endpoint streams), and every "sorted", "only", "never" and "each"; then the project\'s',
    'decisions D-1…D-24, which only profile reference checks. Each case names the clauses it checks; a clause that no',
    'case checks says why. A JSON report (`--reporter json`) carries this matrix with the run\'s outcome of each case',
    '(`matrix`), and the pretty report ends with how many clauses the run\'s passing cases covered.',
    '',
    `${m.clauses} clauses (${rows.filter((r) => !r.id.startsWith('D-')).length} of the interface, ${rows.filter((r) => r.id.startsWith('D-')).length} decisions): ${m.exact} checked exactly, ${m.weak} checked weakly, ${m.none} not checkable from outside.`,
  ];
  let section = '';
  const cell = (t: string) => t.replace(/\|/g, '\\|');
  for (const r of rows) {
    const group = r.section.startsWith('D-') ? 'D' : r.section.split('.')[0]!;
    if (group !== section) {
      section = group;
      out.push('', `### ${group === 'D' ? 'Decisions (profile reference)' : `§${group}`}`, '', '| clause | says | checked | cases |', '|---|---|---|---|');
    }
    const how = r.check === 'exact' ? 'exactly' : `${CHECK_SHOWN[r.check]}: ${cell(r.why ?? '')}`;
    out.push(`| \`${r.id}\` | ${cell(r.text)} | ${how} | ${r.cases.map((c) => `\`${c.id}\``).join(', ')} |`);
  }
  return out.join('\n');
}

const ROOT = path.resolve(import.meta.dirname, '..');
const TARGET_JSON = await fs.readFile(path.join(ROOT, 'fixtures/target.json'), 'utf8');

const DOCS = path.join(ROOT, 'docs/conformance.md');

// `--check` (for CI): exit 1 when the committed page is not what the registry generates.
if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  if (process.argv.includes('--check')) {
    const current = await fs.readFile(DOCS, 'utf8').catch(() => '');
    if (current !== generateDocs()) {
      console.error('docs/conformance.md is stale: run npm run conformance:docs');
      process.exit(1);
    }
    console.log('docs/conformance.md is up to date');
  } else {
    await fs.mkdir(path.dirname(DOCS), { recursive: true });
    await fs.writeFile(DOCS, generateDocs());
    console.log(`docs/conformance.md: ${CASES.length} cases, ${MUTANTS.length} broken implementations, ${VARIANTS.length} variants`);
  }
}
