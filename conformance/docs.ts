// Generates docs/conformance.md from the case registry and the list of broken implementations that
// prove the suite: `npm run conformance:docs`. A test fails when the committed file is stale.
import fs from 'node:fs/promises';
import path from 'node:path';
import { MUTANTS, VARIANTS } from '../test/support/mutants.ts';
import { clauseMatrix, countsText, howChecked, matrixSummary, type MatrixRow } from './clauses.ts';
import { CASES, sectionTitle } from './registry.ts';

const INTRO = `# Conformance suite

The conformance suite judges any implementation of the interface
(\`interface.md\`, version 1.0.0) and tells, case by case, what it does not
do as the interface says. It runs against a live server over HTTP, so the implementation can be written
in any language. The reference server (\`npm start\`) passes every case in both profiles.

## Adopting it in ten minutes

For a team whose CI checks another implementation of the interface:

1. **Get the package.** In a checkout of this repository, \`npm pack\` writes \`parley-<version>.tgz\` (see
   [the package](#the-package) for what it holds). In your CI, \`npm install ./parley-<version>.tgz\`
   in any directory, even an empty one: \`npx parley conformance\` then works there, and nothing else of
   this repository is needed. (From a checkout, \`npm ci\` then \`npm run conformance -- …\` runs the same suite.)
2. **Write the target file** ([below](#the-target-file)): your base URL, a secret key, and the ids of
   a few apps your implementation has set up for the suite. Keep the key out of the file and pass it as
   \`--api-key "$KEY"\` or in \`PARLEY_API_KEY\`.
3. **Run it once by hand**: \`npx parley conformance --target target.json\`. The preflight says at once,
   in one line, if the key, the base URL or an app id is wrong (exit 2). Read the failures: each names
   its case, the interface section, what was expected, and every request that showed it.
4. **Record what you already know fails**: \`--write-baseline conformance-baseline.txt\` writes the failed
   and errored cases, one a line; replace each reason with yours and commit the file.
5. **Run it in CI** with \`--expected-failures conformance-baseline.txt --reporter junit --out conformance.xml\`
   (and \`--reporter html\` for a page to attach): the job fails on a new failure and on a fixed one that is
   still listed, so that the list only shrinks. [An example workflow](#in-ci) is below.

## Running it

\`\`\`sh
npx parley conformance --target my-target.json         # from the installed package
npm run conformance -- --target my-target.json          # from a checkout of this repository
\`\`\`

Options:

| option | meaning |
|---|---|
| \`--target FILE\` | the target file (below); required |
| \`--base-url URL\` | overrides the target's \`base_url\` (it must end in \`/v1\`) |
| \`--api-key KEY\` | overrides the target's \`api_key\` (keeps the key out of files); \`PARLEY_API_KEY\` fills in a target without \`api_key\`, and never replaces one the file gives |
| \`--profile NAME\` | \`spec-1.0.0\` (default): only what interface 1.0.0 states. \`reference-1.0.0\`: also the project's decisions D-1…D-24, and with the target key \`widget\` those of the messenger widget (D-45…D-54). \`spec\` and \`reference\` name the profiles of the interface version this suite judges |
| \`--only GLOB\`, \`--skip GLOB\` | select cases by id; \`*\` and \`?\`, comma-separated or repeated: \`--only 'S4.2-*,S6-*'\`. An \`--only\` pattern that matches no case of the profile is a usage error (exit 2), so that a typo cannot pass |
| \`--reporter pretty\\|json\\|junit\\|tap\\|html\` | report format (default \`pretty\`) |
| \`--out FILE\` | writes the report there; stdout still shows progress, failures and the summary |
| \`--expected-failures FILE\` | the baseline: cases expected to fail, each with a reason ([baselines](#baselines)) |
| \`--write-baseline FILE\` | writes the cases that failed or errored in this run as a baseline file |
| \`--fail-on-skip\` | a skipped case fails the run too (exit 1), for teams that want every case run |
| \`--rate-limit RATE\` | at most RATE requests, as \`5/s\` or \`300/min\`, cases and cleanup together ([hosted servers](#hosted-servers)) |
| \`--timeout MS\` | per request: time to the response headers and longest silence inside a body (default 30000); a stream may take 4× that in total, a case 20× |
| \`--settle-timeout MS\` | how long a case reads again what the interface lets an implementation settle after it answered: the generated title, aggregated metrics (default 30000). Separate from \`--timeout\`, so a fast server can be judged with short request timeouts and slow aggregates |
| \`--bail\` | stops at the first failure (the rest are reported as skipped) |
| \`--repeat N\` | runs the selection N times; a case passes only if it passed every time (to catch flakiness): failed in any run is failed, skipped in any run is skipped |
| \`--list\` | lists the selected cases (with the target keys they need) and exits |

### Exit codes and outcomes

| exit | when |
|---|---|
| **0** | every case passed or was skipped, or failed as the baseline expects |
| **1** | a case failed or errored that the baseline does not list; a listed case passed (a stale entry); the run was interrupted; with \`--fail-on-skip\`, a case was skipped |
| **2** | usage error (a bad option, an unreadable or invalid target file, an unknown key in it, a baseline file with a line that has no reason or names no case, an \`--only\` that matches nothing), or the preflight refused the target |

Each case ends in one of four outcomes:

- **passed**: the implementation did what the case checks.
- **failed**: it did not; the report shows why and every request of the case.
- **skipped**: the case could not judge this target, never counted as passed: the target lacks a key the
  case needs (listed with the key), or the agent never did what the case probes (a tool call, a form).
- **errored**: a precondition that several cases share (a baseline conversation, the conversations the
  list cases page through) failed. The case that ran it fails with its evidence; every other case that
  needed it is errored, and the report shows the precondition once with the cases it blocked grouped
  under it, instead of the same failure once per case.

After a run the last line of stdout is \`conformance: N passed, N failed, N skipped, N errored\`, followed
with a baseline by \` (baseline: N expected failures, N stale)\`; after \`--list\` it is \`conformance: N cases
(profile …)\`. Judge a run by its exit code. A usage error prints its reason on stderr, one line: stdout
is empty when the options or the target file are wrong, and ends with \`conformance: 0 passed, 0 failed, 0
skipped, 0 errored\` when the target was read but the run could not start (preflight, \`--only\` matching
nothing). With \`--reporter json|junit|tap|html\` and no \`--out\`, the report is printed and the summary
line follows it, so machine consumers should use \`--out\`.

Ctrl-C (SIGINT) or SIGTERM during a run stops it: the case under way is reported failed as interrupted, the
rest skipped, what the run created is deleted, and the summary line is printed (exit 1). A second Ctrl-C
ends the process at once, without the cleanup.

As a library: \`runConformance(options)\` from \`conformance/run.ts\` returns the results that the reporters
render (\`render(results, 'junit')\`), and \`exitCode(results)\` the exit code the command would give.

### The preflight

Before any case, the suite reads the config of each app of the target (\`GET /apps/{app_id}/config\`), to
tell a wrong target from a wrong implementation in one line rather than a page of failures. When a selected
case needs the widget, it also sends a browser's preflight (\`OPTIONS\`) from \`widget.origin\` to the main
app's \`/visitors\` under \`widget.base_url\`, and opens one visitor session with \`publishable_key\`:

| the preflight finds | result |
|---|---|
| no answer at all from \`base_url\` | exit 2: \`target … is unreachable\` |
| \`base_url\` not ending in \`/v1\` | exit 2 (§9) |
| 401 for \`app_id\` | exit 2: the key was refused |
| 403 or 404 for \`app_id\`, or an answer that is not a JSON 200 | exit 2: the main app does not answer (or is not active with an agent) |
| 401, 403 or 404 for \`apps.generative_ui\`, \`stream_default\`, \`knowledge_base\` or \`rate_limited\` | exit 2: the target says \`api_key\` can use that app |
| \`other_team_api_key\` refused, or without access to \`apps.other_team\` | exit 2 |
| with a widget case selected: \`widget.origin\` refused (\`origin_not_allowed\`), \`app_id\` without a widget, a 404 for a preflight (\`OPTIONS\`) at \`widget.base_url\`, \`publishable_key\` refused a visitor session | exit 2 |
| 404 for \`apps.other_team\` (the interface allows it for another team's app; a mistyped id gets the same answer), a config of \`apps.generative_ui\` or \`apps.stream_default\` that says the flag is off, \`apps.inactive\` not answering 403 \`app_inactive\`, \`apps.no_agent\` answering neither its config nor 403 \`agent_unavailable\`, a widget preflight answered without \`widget.origin\` in Access-Control-Allow-Origin, a \`widget\` without \`publishable_key\` | a **warning** on stderr and in the report; the run goes on and the cases judge it |

### The target file

What the suite needs to know about your implementation is one JSON file. The reference server's own
target is \`fixtures/target.json\`, which matches the fixtures \`npm start\` loads:

\`\`\`json
${'${TARGET}'}
\`\`\`

| key | what it is | cases that need it |
|---|---|---|
| \`version\` | the version of this format the file follows; 1 when absent (this suite reads versions 1 and 2; a target with \`widget\` says 2) | |
| \`base_url\` | the API's base URL, ending in \`/v1\`; \`--base-url\` overrides it | all |
| \`api_key\` | a secret key with access to \`app_id\` and to every app in \`apps\` but \`other_team\`; \`--api-key\` overrides it, \`PARLEY_API_KEY\` fills it in | all |
| \`app_id\` | an active app with an agent, generative UI off and the streaming default off | most |
| \`apps.generative_ui\` | an app with \`generative_ui: true\` | \`data_spec\` events and items |
| \`apps.stream_default\` | an app whose config has \`stream: true\` | the app default for streaming |
| \`apps.knowledge_base\` | an app whose agent has a knowledge base | \`knowledge_search\` calls |
| \`apps.other_team\` | an app that exists but that \`api_key\` may not use | 403 \`access_denied\` |
| \`apps.inactive\` | a disabled app | 403 \`app_inactive\` |
| \`apps.no_agent\` | an app with no active agent | 403 \`agent_unavailable\` |
| \`apps.rate_limited\` | an app whose plan allows few requests a minute | 429 \`rate_limit_exceeded\` |
| \`publishable_key\` | a publishable key of the same team | publishable keys cannot call the REST API |
| \`widget.base_url\` | version 2. The messenger widget's API (Parley's extension, \`docs/widget.md\` in its repository): an absolute URL, or one relative to \`base_url\` (\`/widget/v1\`, which follows \`--base-url\`) | the §5.4 widget cases (profile reference) |
| \`widget.origin\` | version 2. A page origin that \`app_id\`'s widget allows, such as \`https://shop.example\` | the §5.4 widget cases |
| \`widget.identity_secret\` | version 2, optional inside \`widget\`. \`app_id\`'s identity secret, to sign identities as a host page's server does | signed identities |
| \`other_team_api_key\` | a secret key of the team that owns \`apps.other_team\` | a conversation of the other team is out of reach of \`api_key\` |

\`base_url\`, \`api_key\` and \`app_id\` are required; every other key is optional, and the cases that need a
missing one are **skipped** (listed with the key they need), never counted as passed. \`app_id\` and every
app but \`rate_limited\` must allow at least 3,000 send-message/completion requests a minute.

The format grows: a later suite may know more optional keys. A key this suite does not know is a usage
error (most often a typo: \`apps.generativ_ui\` is reported with \`did you mean apps.generative_ui?\`),
unless the file declares a newer \`version\` than this suite reads; then the suite names the keys it
ignores in a warning and goes on.

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
curl command (the key replaced by \`$API_KEY\`, \`$PUBLISHABLE_KEY\` or \`$OTHER_TEAM_API_KEY\` in the
Authorization header only, never inside a body; \`curl -N\` for a stream; long bodies shortened) and what
came back. A case of several requests also lists the requests before it:

\`\`\`
✗ S4.4-update-title [MUST, §4.4 Update conversation]
    title read back: expected "Renamed by conformance", got "Conformance"
    before it (2 requests; all of them, and a script that replays them, in the JSON and HTML reports):
      POST http://127.0.0.1:8787/v1/apps/app_demo/conversations → 200
      PATCH http://127.0.0.1:8787/v1/apps/app_demo/conversations/conv_… → 200
    sent:
      curl -sS -X GET 'http://127.0.0.1:8787/v1/apps/app_demo/conversations/conv_…' -H "authorization: Bearer $API_KEY"
    got:
      HTTP 200
      content-type: application/json; charset=utf-8

      {"id":"conv_…","object":"conversation","title":"Conformance",…}
\`\`\`

### Reports and their evidence

| reporter | for | a failure carries |
|---|---|---|
| \`pretty\` | people and CI logs | the message, the requests before the failing one, its curl and its response |
| \`json\` | machines | \`failure.exchanges\`: every request of the case and its response (status, all headers, the body parsed where it is JSON, a stream's events as a list of \`{event, data}\`, whether it ended), each with its curl; \`failure.reproduction\` for a case of several requests |
| \`junit\` | CI test tabs | the message, curl, response and reproduction in \`<failure>\`; errored cases as \`<error>\` |
| \`tap\` | TAP 14 consumers | the same in YAML diagnostics |
| \`html\` | a page to attach to the job | one self-contained file (no script, nothing fetched), readable offline: the summary, the clause matrix with each case's outcome, every case, and the evidence of each failure |

Every report names the suite version, the interface version it judges (1.0.0) and the profile
(\`spec-1.0.0\`), so that a report kept with a build says what judged it.

The reproduction is a shell script (it needs \`curl\` and \`node\`, and the key in \`$API_KEY\`): it replays
the case's requests in order, and an id that an earlier answer gave (the conversation the case created)
is read from that answer, since the run deleted what it created. Ids that came from earlier cases of the
run (a shared baseline conversation) are left as they were, and say so in the script.

### Baselines

A team adopting the suite rarely passes every case on day one. A baseline file lists the cases it knows
its implementation fails, one a line, with a reason each:

\`\`\`
# conformance-baseline.txt
S4.2-list-after-walk-desc  pagination walks asc only (TICKET-12)
S6-conv-headers             our proxy strips Cache-Control (INFRA-7)
\`\`\`

With \`--expected-failures FILE\`, a listed case that fails or errors does not fail the run (it shows as
an expected failure), and a listed case that **passes** does: it is a stale entry, to be deleted, so that
the list shrinks as the implementation improves. A line without a reason, or an id that is no case of the
suite, is a usage error (exit 2). Listed cases that the run did not select are named and ignored.
\`--write-baseline FILE\` writes the failed and errored cases of a run in this format, each with the first
line of its failure as a reason to replace with yours.

### Hosted servers

- A 429 is sent again after its \`Retry-After\` (seconds or an HTTP date; 1 s, 2 s, 4 s when absent), at
  most 3 times and never for a wait longer than a minute; the cleanup's deletions too. The one exception
  is \`apps.rate_limited\`, whose 429 is what its case looks for.
- By default the counted requests (send message and completion) stay under 2,900 in any 60 seconds, below
  the 3,000 a minute the target file asks an app to allow: a run waits rather than exceed it.
- \`--rate-limit 5/s\` (or \`300/min\`) spaces every request, cases and cleanup together; a whole run still
  completes, only slower.
- What a run creates is deleted at its end even when the server is slow or rate-limits: a deletion that
  times out, or meets a 429 or a 5xx, is tried up to 4 times; what could still not be deleted is named
  in the report.

### The package

\`npm pack\` makes \`parley-<version>.tgz\`, which holds \`bin/parley.js\` (the \`parley\` command), \`cli/\` (the
CLI), \`conformance/\` (the suite: runner, cases, reporters), \`src/\` (the reference server, which
\`parley serve\` starts, and the interface's schemas the suite checks answers against), \`fixtures/\` (the
reference server's fixtures and target), this page and \`README.md\`. Its dependencies are the runtime
ones of \`package.json\`, with \`tsx\` to run the TypeScript sources as they are (no build step); no test,
benchmark or repository tooling is in it. The long-proof tier (\`test/proof/pack.test.ts\`) packs it,
installs it alone into an empty directory and runs the whole spec profile with \`npx parley conformance\`.

### In CI

\`\`\`yaml
# .github/workflows/conformance.yml (parley-<version>.tgz and the target committed under conformance/)
jobs:
  conformance:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-node@v4
        with: { node-version: 20 }
      - run: ./start-my-implementation.sh &          # your server, listening on :8080
      - run: timeout 60 sh -c 'until curl -s -o /dev/null http://127.0.0.1:8080/v1; do sleep 1; done'
      - run: npm install --no-save ./conformance/parley-*.tgz
      - run: >
          npx parley conformance --target conformance/target.json
          --expected-failures conformance/baseline.txt
          --reporter junit --out conformance.xml
        env: { PARLEY_API_KEY: "\${{ secrets.CONFORMANCE_API_KEY }}" }
        # or --reporter html --out conformance.html: a page with the clause matrix and every failure's evidence
      - uses: actions/upload-artifact@v4
        if: always()
        with: { name: conformance, path: "conformance.*" }
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
  const cases: string[] = [
    '## Cases',
    '',
    `${CASES.length} cases: ${CASES.filter((c) => c.level === 'MUST').length} MUST, ${CASES.filter((c) => c.level === 'REFERENCE').length} REFERENCE.`,
    '',
  ];
  let section = '';
  for (const c of CASES) {
    if (c.section !== section) {
      section = c.section;
      cases.push('', `### ${sectionTitle(section)}`, '', '| id | level | needs | checks | clauses |', '|---|---|---|---|---|');
    }
    cases.push(
      `| \`${c.id}\` | ${c.level} | ${(c.needs ?? []).map((n) => `\`${n}\``).join(', ')} | ${c.description.replace(/\|/g, '\\|')} | ${clauseList(c.clauses)} |`,
    );
  }
  const where = (section: string) => (/^D-/.test(section) ? section : `§${section}`);
  const matrix = renderMatrix(clauseMatrix());
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  const mutants = [
    '| broken implementation | breaks | profile | caught by |',
    '|---|---|---|---|',
    ...MUTANTS.map((m) => `| \`${m.id}\` | ${cell(m.breaks)} (${where(m.section)}) | ${m.profile} | \`${m.caughtBy}\` |`),
  ].join('\n');
  const variants = [
    '| variant | does | open in | departs from (caught in profile reference by) |',
    '|---|---|---|---|',
    ...VARIANTS.map(
      (v) =>
        `| \`${v.id}\` | ${cell(v.does)} | ${v.section.split(', ').map(where).join(', ')} | ${v.decision ? `${v.decision.id} (\`${v.decision.caughtBy}\`)` : v.alone ? `none; run alone with \`--timeout ${v.alone.timeoutMs} --settle-timeout ${v.alone.settleTimeoutMs}\`` : 'none'} |`,
    ),
  ].join('\n');
  return (
    INTRO.replace('${TARGET}', targetJson.trim())
      .replaceAll('${MUTANT_COUNT}', String(MUTANTS.length))
      .replace('${MUTANTS}', mutants)
      .replace('${VARIANTS}', variants)
      .replace(
        '${ALONE}',
        MUTANTS.filter((m) => m.alone)
          .map((m) => `\`${m.id}\`: ${m.alone}`)
          .join('; '),
      ) +
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

/** The decisions the matrix holds, as ranges: `D-1…D-24, D-45, D-48…D-50`. */
function decisionRanges(rows: readonly MatrixRow[]): string {
  const ns = [...new Set(rows.filter((r) => r.id.startsWith('D-')).map((r) => Number(r.id.slice(2))))].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < ns.length; ) {
    let j = i;
    while (j + 1 < ns.length && ns[j + 1] === ns[j]! + 1) j++;
    out.push(
      j > i + 1
        ? `D-${ns[i]}…D-${ns[j]}`
        : ns
            .slice(i, j + 1)
            .map((n) => `D-${n}`)
            .join(', '),
    );
    i = j + 1;
  }
  return out.join(', ');
}

/** The clause → case matrix, by section: each clause, how it is checked (and why not exactly), and its cases. */
function renderMatrix(rows: readonly MatrixRow[]): string {
  const m = matrixSummary(rows);
  const out = [
    '## Clause matrix',
    '',
    `The suite numbers the clauses of the interface itself (\`conformance/interface-clauses.ts\`): every field and its default,`,
    'every MUST-like sentence, every row of every table (the errors of §5.6 and §7 once per endpoint, and once more with',
    '`stream: true` where the endpoint streams), and every "sorted", "only", "never" and "each"; then the project\'s',
    `decisions ${decisionRanges(rows)}, which only profile reference checks. Each case names the clauses it checks; a clause that no`,
    "case checks says why. A JSON report (`--reporter json`) carries this matrix with the run's outcome of each case",
    "(`matrix`), and the pretty report ends with how many clauses the run's passing cases covered.",
    '',
    `${m.clauses} clauses (${rows.filter((r) => !r.id.startsWith('D-')).length} of the interface, ${rows.filter((r) => r.id.startsWith('D-')).length} decisions): ${countsText(m)} from outside. A clause is weak for one of two reasons only: the interface leaves a choice open (its words are quoted), or the target cannot provoke what would show the rest.`,
  ];
  let section = '';
  const cell = (t: string) => t.replace(/\|/g, '\\|');
  for (const r of rows) {
    const group = r.section.startsWith('D-') ? 'D' : r.section.split('.')[0]!;
    if (group !== section) {
      section = group;
      out.push(
        '',
        `### ${group === 'D' ? 'Decisions (profile reference)' : `§${group}`}`,
        '',
        '| clause | says | checked | cases |',
        '|---|---|---|---|',
      );
    }
    const how = cell(howChecked(r));
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
