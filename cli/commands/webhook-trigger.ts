// `parley webhooks trigger <event type>` (docs/webhooks.md, D-129): a synthetic, signed test event sent
// to one endpoint through the admin surface (`POST /webhook_endpoints/:id/test`), twice with one
// `webhook-id`, two out of order, or later, so that a team proves its receiver's signature check and
// de-duplication without provoking real traffic.
import { Command } from 'commander';
import { listOf } from '../../src/contract/admin.ts';
import { TestWebhookRequest, WebhookEndpointView, WebhookTestView } from '../../src/contract/admin-webhooks.ts';
import { WEBHOOK_EVENT_TYPES } from '../../src/contract/webhook-event-types.ts';
import { adminClient, checkedBody, show } from '../admin.ts';
import type { Session } from '../context.ts';
import { UsageError } from '../io.ts';

export function triggerCommand(session: Session): Command {
  return new Command('trigger')
    .addHelpText(
      'after',
      `\nEvent types: ${WEBHOOK_EVENT_TYPES.join(', ')}\n\nExamples:\n  parley webhooks trigger conversation.created --duplicate\n  parley webhooks trigger response.completed --endpoint we_abc123 --out-of-order --delay 10\n`,
    )
    .description('send an endpoint a synthetic, signed test event ("test": true); the only endpoint of the app in use without --endpoint')
    .argument('<event_type>')
    .option('--endpoint <endpoint_id>', 'the endpoint (default: the app in use has only one)')
    .option('--duplicate', 'send it twice, with one webhook-id')
    .option('--out-of-order', 'two events about one resource, the later one delivered first')
    .option('--delay <seconds>', 'send it this many seconds from now')
    .action(async (type: string, o: { endpoint?: string; duplicate?: boolean; outOfOrder?: boolean; delay?: string }, c: Command) => {
      const { admin, g } = adminClient(session, c);
      const given = {
        type,
        duplicate: o.duplicate,
        out_of_order: o.outOfOrder,
        delay_s: o.delay === undefined ? undefined : /^\d+$/.test(o.delay) ? Number(o.delay) : o.delay,
      };
      const body = checkedBody(TestWebhookRequest, given, { type: '<event_type>', delay_s: '--delay' });
      const id = o.endpoint ?? (await onlyEndpoint(admin, g.app));
      const r = await admin.post(`/webhook_endpoints/${encodeURIComponent(id)}/test`, WebhookTestView, body);
      const times = r.data.sends === 2 ? ', twice each' : '';
      show(session, g, r, () => `sending ${r.data.type} test event ${r.data.event_ids.join(', ')} to ${id}${times}\n`);
    });
}

/** The one endpoint of `app`: several, or none, is a usage error naming them. */
async function onlyEndpoint(admin: ReturnType<typeof adminClient>['admin'], app: string | undefined): Promise<string> {
  if (!app) throw new UsageError('no endpoint: pass --endpoint <endpoint_id> (or --app, to take its only endpoint)');
  const r = await admin.get('/webhook_endpoints', listOf(WebhookEndpointView), { app_id: app });
  const ids = r.data.data.map((e) => e.id);
  if (ids.length === 1) return ids[0]!;
  throw new UsageError(
    ids.length === 0
      ? `app ${app} has no webhook endpoint: create one first`
      : `app ${app} has ${ids.length} endpoints (${ids.join(', ')}): pass --endpoint`,
  );
}
