// Generates docs/conformance.md from the case registry and the list of broken implementations that
// prove the suite: `npm run conformance:docs`. A test fails when the committed file is stale.
import fs from 'node:fs/promises';
import path from 'node:path';
import { MUTANTS } from '../test/mutants.ts';
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
| \`--only GLOB\`, \`--skip GLOB\` | select cases by id; \`*\` and \`?\`, comma-separated or repeated: \`--only 'S4.2-*,S6-*'\` |
| \`--reporter pretty\\|json\\|junit\\|tap\` | report format (default \`pretty\`) |
| \`--out FILE\` | writes the report there; stdout still shows progress, failures and the summary |
| \`--timeout MS\` | per request: time to the response headers and longest silence inside a body (default 30000); a stream may take 4× that in total, a case 20× |
| \`--bail\` | stops at the first failure (the rest are reported as skipped) |
| \`--repeat N\` | runs the selection N times; a case passes only if it passed every time (to catch flakiness) |
| \`--list\` | lists the selected cases (with the target keys they need) and exits |

Exit codes: **0** no case failed, **1** at least one case failed, **2** usage error (bad option, unreadable
or invalid target file) or the target is unreachable. The last line of the output is always
\`conformance: N passed, N failed, N skipped\` (after \`--list\`: \`conformance: N cases (profile …)\`). With \`--reporter json|junit|tap\` and no \`--out\`, the report
is printed and this line follows it, so machine consumers should use \`--out\`.

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
and the streaming default off. Each key of \`apps\` and \`publishable_key\` is optional: the cases that need
a missing one are **skipped** (listed with the key they need) and never counted as passed. \`app_id\` and
every app but \`rate_limited\` must allow at least 3,000 send-message/completion requests a minute.

### Profiles and levels

Each case has a level. **MUST** cases check what the interface states and run in both profiles. Where the
interface requires an error but does not say which (a malformed body, a value out of range), a MUST case
accepts any 4xx with a valid error object. **REFERENCE** cases check a project decision (D-n in
\`decisions.md\`: exact error codes and params, \`sequence_number\`, pagination of \`before\` in desc order, …)
and run only with \`--profile reference\`. A spec-profile run never fails an implementation for a choice the
interface leaves open. A few cases cannot judge every implementation: when the agent emits no function call
or no \`data_spec\` in reply to the probe message, the case is skipped with that reason.

### What a run does to your implementation

Cases run one after another. A negative case starts from a request that passed earlier in the same run and
changes one thing. Every conversation a run creates carries the run's id (\`external_user_id\`
\`conformance-<run id>\` and/or \`metadata.conformance_run\`), and all of them are deleted at the end (soft
delete, as §4.5 defines it). A run creates a few dozen conversations (up to ~130 when the app is empty, for
the list-limit cases), sends about 40 messages and 20 completions, and the rate-limit case sends messages to
\`apps.rate_limited\` until it is refused (at most 100). The list and metrics cases assume that nothing
else writes to \`app_id\` during the run (the run's conversations must be the newest, and metric deltas its own).

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

\`npm test\` runs the suite against the reference server in both profiles (every case passes), then
against ${'${MUTANT_COUNT}'} deliberately broken implementations: a loopback proxy in front of the reference
server that breaks one rule each. Each must make the suite fail **with the case that should catch it**
(the test asserts the case id). All ${'${MUTANT_COUNT}'} are caught:

${'${MUTANTS}'}
`;

export function generateDocs(targetJson = TARGET_JSON): string {
  const cases: string[] = ['## Cases', '', `${CASES.length} cases: ${CASES.filter((c) => c.level === 'MUST').length} MUST, ${CASES.filter((c) => c.level === 'REFERENCE').length} REFERENCE.`, ''];
  let section = '';
  for (const c of CASES) {
    if (c.section !== section) {
      section = c.section;
      cases.push('', `### ${sectionTitle(section)}`, '', '| id | level | needs | checks |', '|---|---|---|---|');
    }
    cases.push(`| \`${c.id}\` | ${c.level} | ${(c.needs ?? []).map((n) => `\`${n}\``).join(', ')} | ${c.description.replace(/\|/g, '\\|')} |`);
  }
  const mutants = ['| broken implementation | breaks | profile | caught by |', '|---|---|---|---|', ...MUTANTS.map((m) => `| \`${m.id}\` | ${m.breaks.replace(/\|/g, '\\|')} (${/^D-/.test(m.section) ? m.section : `§${m.section}`}) | ${m.profile} | \`${m.caughtBy}\` |`)].join('\n');
  return (
    INTRO.replace('${TARGET}', targetJson.trim())
      .replaceAll('${MUTANT_COUNT}', String(MUTANTS.length))
      .replace('${MUTANTS}', mutants) +
    '\n' +
    cases.join('\n') +
    '\n'
  );
}

const ROOT = path.resolve(import.meta.dirname, '..');
const TARGET_JSON = await fs.readFile(path.join(ROOT, 'fixtures/target.json'), 'utf8');

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  await fs.mkdir(path.join(ROOT, 'docs'), { recursive: true });
  await fs.writeFile(path.join(ROOT, 'docs/conformance.md'), generateDocs());
  console.log(`docs/conformance.md: ${CASES.length} cases, ${MUTANTS.length} broken implementations`);
}
