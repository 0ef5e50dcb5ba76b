// `parley webhooks check-receiver` (docs/webhooks.md, "Checking your receiver", D-175): sends a team's
// webhook receiver deliveries it must accept and deliveries it must refuse, and reports what it
// answered with the conformance suite's reporters and exit codes.
import fs from 'node:fs/promises';
import { Command } from 'commander';
import { webhookSecretText, webhookSigningKey } from '../../src/core/api-keys.ts';
import type { Session } from '../context.ts';
import { UsageError } from '../io.ts';

/** D-175: a receiver's answer is waited for this long unless --timeout or PARLEY_TIMEOUT says otherwise. */
const DEFAULT_TIMEOUT_S = 10;

/** Standard Webhooks: a symmetric secret is `whsec_` and the base64 of 24 to 64 bytes. */
function checkedSecret(secret: string): string {
  const b64 = secret.startsWith('whsec_') ? secret.slice(6) : '';
  const bytes = /^[A-Za-z0-9+/]+={0,2}$/.test(b64) ? Buffer.from(b64, 'base64').length : 0;
  if (bytes < 24 || bytes > 64)
    throw new UsageError(
      '--secret must be a signing secret, whsec_ and the base64 of 24 to 64 bytes (parley webhooks secret prints yours)',
    );
  return secret;
}

function checkedUrl(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new UsageError(`--url must be the receiver's http or https URL (got ${JSON.stringify(text)})`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new UsageError(`--url must be an http or https URL (got ${JSON.stringify(text)})`);
  return url;
}

/** Whether --timeout was given to this command or an ancestor, or PARLEY_TIMEOUT is set. */
function timeoutGiven(c: Command, env: NodeJS.ProcessEnv): boolean {
  for (let x: Command | null = c; x; x = x.parent) if (x.opts().timeout !== undefined) return true;
  return Boolean(env.PARLEY_TIMEOUT);
}

export function checkReceiverCommand(session: Session): Command {
  return new Command('check-receiver')
    .description('send your webhook receiver signed deliveries it must accept and ones it must refuse, and report what it answered (D-175)')
    .addHelpText(
      'after',
      `
Exit codes: 0 every case passed, 1 a case failed, 2 usage error. --timeout is per request (default ${DEFAULT_TIMEOUT_S} s); nothing is retried.

Examples:
  parley webhooks check-receiver --url http://127.0.0.1:3000/hooks --secret whsec_…
  parley webhooks check-receiver --url https://hooks.example.com/parley --reporter junit --out receiver.xml
`,
    )
    .requiredOption('--url <url>', 'your receiver (any http or https URL)')
    .option('--secret <whsec>', 'the signing secret it verifies with (default: computed from the secret key in use)')
    .option('--reporter <name>', 'report format: pretty, json, junit, tap or html', 'pretty')
    .option('--out <file>', 'write the report there; stdout still shows progress, failures and the summary')
    .action(async (o: { url: string; secret?: string; reporter: string; out?: string }, c: Command) => {
      const g = session.globals(c);
      const out = session.out;
      const url = checkedUrl(o.url);
      let secret: string;
      if (o.secret) secret = checkedSecret(o.secret);
      else if (g.apiKey?.startsWith('sk_')) secret = webhookSecretText(webhookSigningKey(g.apiKey));
      else throw new UsageError('no secret: pass --secret whsec_… or use a secret key (--api-key, PARLEY_API_KEY)');
      out.addSecret(secret);
      // The suite ships with the package; loaded here so that the other commands never need it.
      const [{ checkReceiver, receiverRunHeader }, reporters, { newRunId }] = await Promise.all([
        import('../../conformance/receiver-check.ts'),
        import('../../conformance/reporters.ts'),
        import('../../conformance/run.ts'),
      ]);
      // parley's --json, as every command reads it, asks for the json reporter.
      const reporterGiven = c.getOptionValueSource('reporter') !== 'default';
      if (g.json && reporterGiven && o.reporter !== 'json') throw new UsageError('--json and --reporter name two reports: give one');
      const reporter = reporters.REPORTERS.find((r) => r === (g.json ? 'json' : o.reporter));
      if (!reporter)
        throw new UsageError(`--reporter must be one of ${reporters.REPORTERS.join(', ')} (got ${JSON.stringify(o.reporter)})`);
      const timeoutMs = timeoutGiven(c, session.io.env) ? g.timeoutMs : DEFAULT_TIMEOUT_S * 1000;
      const runId = newRunId();
      const appId = g.app ?? 'app_check_receiver';
      const progress = reporter === 'pretty' || o.out !== undefined;
      if (progress) out.line(reporters.prettyHeader(receiverRunHeader(url.href, runId, appId)));
      let section = '';
      const run = await checkReceiver({
        url: url.href,
        secret,
        timeoutMs,
        appId,
        runId,
        onResult: progress
          ? (r) => {
              if (r.section !== section) out.line((section = r.section));
              out.line(reporters.prettyLine(r));
            }
          : undefined,
      });
      if (o.out) {
        await fs.writeFile(o.out, `${reporters.render(run, reporter)}\n`).catch((err: NodeJS.ErrnoException) => {
          throw new UsageError(`--out: cannot write ${o.out}: ${err.code ?? err.message}`);
        });
      }
      out.line(progress ? reporters.renderPretty(run, { progressShown: true }) : reporters.render(run, reporter));
      out.line(reporters.summaryLine(run.summary, undefined, 'check-receiver'));
      if (run.summary.failed > 0) session.exitCode = 1;
    });
}
