// `parley webhooks …` (docs/webhooks.md, D-88, D-89): a team's endpoints and deliveries on the admin
// surface (the admin login of D-79, or PARLEY_ADMIN_TOKEN), the signing secret computed locally
// from the key in use, a saved delivery verified, and `listen --forward-to`, after the Stripe CLI.
import fs from 'node:fs/promises';
import { Command, Option } from 'commander';
import { createParser } from 'eventsource-parser';
import { redacted, webhookSecretText, webhookSigningKey } from '../../src/core/api-keys.ts';
import { signingKeyOf, verifySignature } from '../../src/core/webhook-signature.ts';
import type { z } from 'zod';
import { AdminDeletion, ApiKey, listOf } from '../../src/contract/admin.ts';
import { CreateWebhookEndpointRequest, UpdateWebhookEndpointRequest, WebhookEndpointView } from '../../src/contract/admin-webhooks.ts';
import { adminClient, adminUrlOf, checkedBody, commaList, confirm, narrowingApp, show } from '../admin.ts';
import { ApiError, ConnectionError, describeNetworkError } from '../core/error.ts';
import type { Session } from '../context.ts';
import { UsageError } from '../io.ts';
import { table, time } from '../render.ts';
import { deliveryCommands } from './webhook-deliveries.ts';
import { checkReceiverCommand } from './webhook-receiver.ts';
import { triggerCommand } from './webhook-trigger.ts';

type EndpointT = z.infer<typeof WebhookEndpointView>;
const EndpointList = listOf(WebhookEndpointView);

function endpointState(e: EndpointT): string {
  return e.enabled ? 'enabled' : `disabled (${e.disabled_reason})`;
}

/** D-150: the key an endpoint is signed with, and its state unless it simply works. */
function signingKey(e: EndpointT): string {
  return `${e.signing_key_id ?? '(none)'}${e.signing_key_state === 'active' ? '' : ` (${e.signing_key_state})`}`;
}

/** One endpoint after a create or an update: its fields on one line. */
function endpointLine(e: EndpointT): string {
  const fields = [e.id, e.app_id, endpointState(e), e.url, `[${e.events.join(',')}]`, `signed with ${signingKey(e)}`];
  return `${fields.join('  ')}${e.description ? `  ${e.description}` : ''}`;
}

const ENDPOINT_HEADER = ['ID', 'APP', 'STATE', 'URL', 'EVENTS', 'SIGNING KEY', 'CREATED', 'DESCRIPTION'];
const endpointRows = (list: EndpointT[]) =>
  list.map((e) => [e.id, e.app_id, endpointState(e), e.url, e.events.join(','), signingKey(e), time(e.created_at), e.description || '-']);

/** `5m`, `30s`, `1h` or seconds: the tolerance of `verify`. */
function toleranceSeconds(text: string): number {
  const m = /^(\d+)(s|m|h)?$/.exec(text);
  if (!m) throw new UsageError(`--tolerance must be a duration such as 300, 30s, 5m or 1h (got ${JSON.stringify(text)})`);
  return Number(m[1]) * { s: 1, m: 60, h: 3600 }[(m[2] ?? 's') as 's' | 'm' | 'h'];
}

export function webhooksCommand(session: Session): Command {
  const out = session.out;
  const cmd = new Command('webhooks')
    .description('webhook endpoints, deliveries, test events, the signing secret, verify, listen and check-receiver (docs/webhooks.md)')
    .addHelpText(
      'after',
      `
The admin commands need an admin login (parley admin login, or PARLEY_ADMIN_TOKEN); secret, verify and check-receiver use the API key in use (or --secret).

Examples:
  parley webhooks create --url https://example.com/hooks --events response.completed,response.failed
  parley webhooks listen --forward-to http://127.0.0.1:3000/hooks
  parley webhooks trigger conversation.created --duplicate
  parley webhooks secret
  parley webhooks verify --payload body.json --header 'webhook-id: evt_…' --header 'webhook-timestamp: …' --header 'webhook-signature: v1,…'
  parley webhooks check-receiver --url http://127.0.0.1:3000/hooks --secret whsec_…
`,
    );
  const flags = {
    url: '--url',
    events: '--events',
    description: '--description',
    enabled: '--enable/--disable',
    endpoint_id: '--endpoint',
    signing_key_id: '--signing-key',
  };
  cmd
    .command('list')
    .addHelpText('after', `\nExample:\n  parley webhooks list --app app_demo --json\n`)
    .description("the team's endpoints (of one app with the --app flag; the profile's or PARLEY_APP_ID's app does not narrow it, D-152)")
    .action(async (_o: unknown, c: Command) => {
      const { admin, g } = adminClient(session, c);
      const r = await admin.get('/webhook_endpoints', EndpointList, { app_id: narrowingApp(g) });
      show(session, g, r, () => (r.data.data.length ? table(endpointRows(r.data.data), ENDPOINT_HEADER) : '(no endpoints)\n'));
    });
  cmd
    .command('create')
    .addHelpText(
      'after',
      `\nExample:\n  parley webhooks create --url https://example.com/hooks --events response.completed,response.failed\n`,
    )
    .description('a new endpoint of the app')
    .requiredOption('--url <url>', 'where events are sent')
    .requiredOption('--events <types>', 'comma-separated event types, or *')
    .option('--description <text>', 'what it is for')
    .option('--signing-key <key_id>', "the secret key whose secret signs its deliveries (default: the team's oldest working one, D-150)")
    .action(async (o: { url: string; events: string; description?: string; signingKey?: string }, c: Command) => {
      const { admin, g } = adminClient(session, c);
      if (!g.app) throw new UsageError('no app: pass --app or set PARLEY_APP_ID');
      const body = checkedBody(
        CreateWebhookEndpointRequest,
        { app_id: g.app, url: o.url, events: commaList(o.events), description: o.description, signing_key_id: o.signingKey },
        { ...flags, app_id: '--app' },
      );
      const r = await admin.post('/webhook_endpoints', WebhookEndpointView, body);
      show(session, g, r, () => `${endpointLine(r.data)}\n`);
    });
  cmd
    .command('update')
    .addHelpText('after', `\nExample:\n  parley webhooks update we_abc123 --events '*' --enable\n`)
    .description('change an endpoint')
    .argument('<endpoint_id>')
    .option('--url <url>')
    .option('--events <types>')
    .option('--description <text>')
    .addOption(new Option('--enable', 'send it events again').conflicts('disable'))
    .option('--disable', 'send it nothing (events meanwhile are skipped; redeliver sends them)')
    .option('--signing-key <key_id>', 'sign it with this secret key from now on (and enable it if its old key stopped working, D-150)')
    .action(
      async (
        id: string,
        o: { url?: string; events?: string; description?: string; enable?: boolean; disable?: boolean; signingKey?: string },
        c: Command,
      ) => {
        const { admin, g } = adminClient(session, c);
        const given = {
          url: o.url,
          events: o.events === undefined ? undefined : commaList(o.events),
          description: o.description,
          enabled: o.enable ? true : o.disable ? false : undefined,
          signing_key_id: o.signingKey,
        };
        const body = checkedBody(UpdateWebhookEndpointRequest, given, flags);
        // D-115: an endpoint is changed with PATCH.
        const r = await admin.patch(`/webhook_endpoints/${encodeURIComponent(id)}`, WebhookEndpointView, body);
        show(session, g, r, () => `${endpointLine(r.data)}\n`);
      },
    );
  cmd
    .command('delete')
    .addHelpText('after', `\nExample:\n  parley webhooks delete we_abc123 --yes\n`)
    .description('delete an endpoint')
    .argument('<endpoint_id>')
    .option('--yes', 'do it without asking (a script, without a terminal, is never asked)')
    .action(async (id: string, o: { yes?: boolean }, c: Command) => {
      const { admin, g } = adminClient(session, c);
      // D-64, as `keys revoke` and `members remove`: a person at a terminal confirms.
      if (!(await confirm(session, o.yes, `Delete endpoint ${id}? It gets no more events.`, `kept ${id}`))) return;
      const r = await admin.delete(`/webhook_endpoints/${encodeURIComponent(id)}`, AdminDeletion);
      show(session, g, r, () => `deleted ${id}\n`);
    });
  deliveryCommands(session, cmd);
  cmd
    .command('secret')
    .addHelpText('after', `\nExample:\n  parley webhooks secret --endpoint we_abc123\n`)
    .description('the signing secret (whsec_…) of the secret key in use, computed here: the secret is never sent')
    .option('--endpoint <endpoint_id>', 'first check that the endpoint is signed with the key in use (D-150; needs the admin login)')
    .action(async (o: { endpoint?: string }, c: Command) => {
      const g = session.globals(c);
      if (!g.apiKey?.startsWith('sk_')) throw new UsageError('no secret key: pass --api-key, set PARLEY_API_KEY or run parley login');
      if (o.endpoint) await checkSigningKey(session, c, o.endpoint, g.apiKey);
      const secret = webhookSecretText(webhookSigningKey(g.apiKey));
      if (g.json) out.line(JSON.stringify({ object: 'webhook_secret', secret }));
      else out.out(`${secret}\n`);
    });
  cmd
    .command('verify')
    .addHelpText(
      'after',
      `\nExample:\n  parley webhooks verify --payload body.json --header 'webhook-id: evt_…' --header 'webhook-timestamp: 1764215400' --header 'webhook-signature: v1,…'\n`,
    )
    .description('check a saved delivery: its body and webhook-* headers, with the key in use or --secret')
    .requiredOption('--payload <file>', 'the raw body as received')
    .option(
      '--header <name: value>',
      'a header (repeat for webhook-id, webhook-timestamp, webhook-signature)',
      (v: string, a: string[]) => [...a, v],
      [],
    )
    .option('--secret <whsec>', 'the signing secret (default: computed from the key in use)')
    .option('--tolerance <duration>', 'how far the timestamp may be from now (default 5m)', '5m')
    .option('--no-tolerance', 'do not check the timestamp (an old delivery)')
    .action(async (o: { payload: string; header: string[]; secret?: string; tolerance: string | false }, c: Command) => {
      const g = session.globals(c);
      let key: Buffer;
      if (o.secret) key = signingKeyOf(o.secret);
      else if (g.apiKey?.startsWith('sk_')) key = webhookSigningKey(g.apiKey);
      else throw new UsageError('no secret: pass --secret whsec_… or use a secret key (--api-key, PARLEY_API_KEY)');
      const headers: Record<string, string> = {};
      for (const h of o.header) {
        const i = h.indexOf(':');
        if (i < 1) throw new UsageError(`--header must be "name: value" (got ${JSON.stringify(h)})`);
        headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
      }
      const body = await fs.readFile(o.payload).catch(() => {
        throw new UsageError(`cannot read ${o.payload}`);
      });
      const tolerance = o.tolerance === false ? null : toleranceSeconds(o.tolerance);
      const r = verifySignature(key, headers, body, Math.floor(Date.now() / 1000), tolerance);
      if (g.json) out.line(JSON.stringify({ object: 'webhook_verification', valid: r.ok, ...(r.ok ? {} : { reason: r.reason }) }));
      else out.out(r.ok ? 'valid\n' : `invalid: ${r.reason}\n`);
      if (!r.ok) session.exitCode = 1;
    });
  cmd
    .command('listen')
    .addHelpText('after', `\nExample:\n  parley webhooks listen --forward-to http://127.0.0.1:3000/hooks\n`)
    .description("receive the app's events live and forward each, body and webhook-* headers unchanged (not retried, not recorded)")
    .requiredOption('--forward-to <url>', 'where to POST each event (your local receiver)')
    .option('--signing-key <key_id>', "the secret key whose secret signs the events (default: the team's oldest working one, D-150)")
    .action(async (o: { forwardTo: string; signingKey?: string }, c: Command) => listen(session, c, o.forwardTo, o.signingKey));
  cmd.addCommand(triggerCommand(session));
  cmd.addCommand(checkReceiverCommand(session));
  return cmd;
}

/**
 * D-150: refuses unless `apiKey` is the key endpoint `id` is signed with (or, in a roll's grace, its
 * successor), known by its listed form (prefix and last four): the server never holds the secret itself.
 */
async function checkSigningKey(session: Session, c: Command, id: string, apiKey: string): Promise<void> {
  const { admin } = adminClient(session, c);
  const e = (await admin.get(`/webhook_endpoints/${encodeURIComponent(id)}`, WebhookEndpointView)).data;
  const keys = (await admin.get('/keys', listOf(ApiKey))).data.data;
  const own = keys.find((k) => k.id === e.signing_key_id);
  const next = own?.rolled_to ? keys.find((k) => k.id === own.rolled_to) : undefined;
  const held = [own, e.signing_key_state === 'rolled' ? next : undefined].some((k) => k?.redacted === redacted(apiKey));
  if (e.signing_key_state !== 'active' && e.signing_key_state !== 'rolled')
    throw new UsageError(
      `endpoint ${id} is signed with ${e.signing_key_id ?? 'no key'}, which is ${e.signing_key_state}: nothing is sent to it. Name a working key: parley webhooks update ${id} --signing-key KEY_ID`,
    );
  if (!held)
    throw new UsageError(
      `endpoint ${id} is signed with ${own?.id} (${own?.redacted}${next && e.signing_key_state === 'rolled' ? `, and during its grace ${next.id} ${next.redacted}` : ''}), not with the key in use (${redacted(apiKey)}): pass that key with --api-key, or sign the endpoint with yours (parley webhooks update ${id} --signing-key KEY_ID)`,
    );
  if (e.signing_key_state === 'rolled')
    session.out.note(
      `key ${own?.id} was rolled to ${next?.id}: move the endpoint to it before the grace ends (parley webhooks update ${id} --signing-key ${next?.id})`,
    );
}

/** D-88: follows the admin surface's live stream and forwards each event until interrupted. */
async function listen(session: Session, c: Command, forwardTo: string, signingKey?: string): Promise<void> {
  const out = session.out;
  // The admin login's token (D-79: the hint, the checksum); the stream is read here, event by event.
  const { g } = adminClient(session, c);
  const token = g.adminToken!;
  const url = (path: string) => `${adminUrlOf(g.baseUrl)}${path}`;
  if (!g.app) throw new UsageError('no app: pass --app or set PARLEY_APP_ID');
  let res: Response;
  try {
    const key = signingKey ? `&signing_key_id=${encodeURIComponent(signingKey)}` : '';
    res = await fetch(url(`/webhook_events/stream?app_id=${encodeURIComponent(g.app)}${key}`), {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
      signal: out.closedSignal,
    });
  } catch (err) {
    throw new ConnectionError(url('/webhook_events/stream'), `cannot reach ${url('/webhook_events/stream')}: ${describeNetworkError(err)}`);
  }
  if (!res.ok || !res.body) throw ApiError.fromBody(res.status, await res.text(), Object.fromEntries(res.headers));
  // Forwarded one at a time, in the order received.
  let chain = Promise.resolve();
  const parser = createParser({
    onEvent: (m) => {
      const data = JSON.parse(m.data) as { event_id?: string; event_type?: string; headers?: Record<string, string>; body?: string };
      if (m.event === 'webhook.listening') {
        out.note(`Ready: forwarding ${g.app}'s events to ${forwardTo} (Ctrl-C to stop)`);
        return;
      }
      if (m.event !== 'webhook.event') return;
      chain = chain.then(async () => {
        let status: string;
        try {
          const r = await fetch(forwardTo, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...data.headers },
            body: data.body,
            redirect: 'manual',
            signal: AbortSignal.timeout(g.timeoutMs),
          });
          await r.arrayBuffer().catch(() => {});
          status = String(r.status);
        } catch (err) {
          status = `failed (${describeNetworkError(err)})`;
        }
        if (g.json) out.line(JSON.stringify({ event_id: data.event_id, type: data.event_type, status }));
        else out.out(`${new Date().toISOString()}  --> ${data.event_type} [${data.event_id}]  <-- ${status}\n`);
      });
    },
  });
  const decoder = new TextDecoder();
  try {
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) parser.feed(decoder.decode(chunk, { stream: true }));
  } catch (err) {
    if (!out.closedSignal.aborted)
      throw new ConnectionError(url('/webhook_events/stream'), `the stream ended: ${describeNetworkError(err)}`);
  }
  await chain;
  // The stream never ends by itself: Parley went away (exit 3, as any lost connection).
  if (!out.closedSignal.aborted) throw new ConnectionError(url('/webhook_events/stream'), 'the stream ended: Parley closed it');
}
