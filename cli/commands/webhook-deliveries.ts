// `parley webhooks deliveries` and `redeliver` (docs/webhooks.md, D-87, D-88, D-156): the delivery log,
// all of it or the failed deliveries, and an event sent again, or every delivery that failed since a time.
import type { Command } from 'commander';
import type { z } from 'zod';
import { listOf } from '../../src/contract/admin.ts';
import {
  RedeliverFailedRequest,
  RedeliverRequest,
  WebhookDeliveryView,
  WebhookRedeliveryBatch,
  WebhookRedeliveryView,
} from '../../src/contract/admin-webhooks.ts';
import { adminClient, checkedBody, parseSince, show } from '../admin.ts';
import type { Session } from '../context.ts';
import { UsageError } from '../io.ts';
import { table, time } from '../render.ts';

type DeliveryT = z.infer<typeof WebhookDeliveryView>;
const DeliveryList = listOf(WebhookDeliveryView);

const DELIVERY_HEADER = ['EVENT', 'TYPE', 'ENDPOINT', 'STATE', 'ATTEMPTS', 'LAST ATTEMPT', 'ANSWER'];
const deliveryRows = (list: DeliveryT[]) =>
  list.map((d) => [
    d.event_id,
    d.event_type,
    d.endpoint_id,
    d.state,
    String(d.attempts),
    d.last_attempt ? time(d.last_attempt.created_at) : '-',
    d.last_attempt ? String(d.last_attempt.status ?? d.last_attempt.error) : '-',
  ]);

const SINCE_HELP = 'events from this time: ISO 8601, Unix seconds, or a duration ago (24h, 7d), as audit list --since';

/** `--since` as Unix seconds, for a request body (a query takes the text as it is). */
function sinceSeconds(text: string): number {
  const t = parseSince(text);
  const s = /^\d+$/.test(t) ? Number(t) : Math.floor(Date.parse(t) / 1000);
  if (!Number.isSafeInteger(s) || s < 0)
    throw new UsageError(`--since must be ISO 8601, Unix seconds or a duration such as 24h or 7d (got ${JSON.stringify(text)})`);
  return s;
}

/** Adds `deliveries` and `redeliver` to `parley webhooks`. */
export function deliveryCommands(session: Session, cmd: Command): void {
  cmd
    .command('deliveries')
    .addHelpText(
      'after',
      `\nExamples:\n  parley webhooks deliveries --endpoint we_abc123\n  parley webhooks deliveries --failed --since 24h\n`,
    )
    .description('the delivery log, newest first, with the last attempt of each')
    .option('--endpoint <endpoint_id>')
    .option('--event <event_id>')
    .option('--failed', 'only the failed deliveries: ended failed, or waiting to retry after a failure (D-156)')
    .option('--since <time>', SINCE_HELP)
    .action(async (o: { endpoint?: string; event?: string; failed?: boolean; since?: string }, c: Command) => {
      const { admin, g } = adminClient(session, c);
      const r = await admin.get('/webhook_deliveries', DeliveryList, {
        endpoint_id: o.endpoint,
        event_id: o.event,
        failed: o.failed ? 'true' : undefined,
        since: o.since === undefined ? undefined : parseSince(o.since),
      });
      const none = o.failed ? '(no failed deliveries)\n' : '(no deliveries)\n';
      show(session, g, r, () => (r.data.data.length ? table(deliveryRows(r.data.data), DELIVERY_HEADER) : none));
    });
  cmd
    .command('redeliver')
    .addHelpText(
      'after',
      `\nExamples:\n  parley webhooks redeliver evt_abc123 --endpoint we_abc123\n  parley webhooks redeliver --failed --since 24h\n`,
    )
    .description('send an event again to its endpoints (or one of them); with --failed, every delivery that failed since --since')
    .argument('[event_id]')
    .option('--endpoint <endpoint_id>')
    .option('--failed', 'every delivery that ended failed, of events since --since (D-156)')
    .option('--since <time>', SINCE_HELP)
    .action(async (id: string | undefined, o: { endpoint?: string; failed?: boolean; since?: string }, c: Command) => {
      if (o.failed) {
        if (id !== undefined) throw new UsageError('give an event id or --failed, not both');
        if (o.since === undefined) throw new UsageError('--failed needs --since: how far back, e.g. --since 24h');
        return redeliverFailed(session, c, sinceSeconds(o.since), o.endpoint);
      }
      if (id === undefined) throw new UsageError('give the event id to send again, or --failed --since <time>');
      if (o.since !== undefined) throw new UsageError('--since goes with --failed');
      const { admin, g } = adminClient(session, c);
      const body = checkedBody(RedeliverRequest, { endpoint_id: o.endpoint }, { endpoint_id: '--endpoint' });
      const r = await admin.post(`/events/${encodeURIComponent(id)}/redeliver`, WebhookRedeliveryView, body);
      show(session, g, r, () => `redelivering ${id} to ${r.data.endpoints.join(', ')}\n`);
    });
}

/** D-156: calls the batch redeliver until none is left (`--json`: each answer on its line). */
async function redeliverFailed(session: Session, c: Command, since: number, endpoint: string | undefined): Promise<void> {
  const { admin, g } = adminClient(session, c);
  const body = checkedBody(RedeliverFailedRequest, { since, endpoint_id: endpoint }, { since: '--since', endpoint_id: '--endpoint' });
  let events = 0;
  let deliveries = 0;
  for (;;) {
    const r = await admin.post('/webhook_deliveries/redeliver', WebhookRedeliveryBatch, body);
    if (g.json) show(session, g, r, () => '');
    events += r.data.events;
    deliveries += r.data.deliveries;
    // A call that sent nothing again ends the walk even if the server says more (it cannot go on).
    if (!r.data.has_more || r.data.deliveries === 0) break;
  }
  if (!g.json)
    session.out.out(
      deliveries
        ? `redelivering ${deliveries} failed deliver${deliveries === 1 ? 'y' : 'ies'} of ${events} event${events === 1 ? '' : 's'}\n`
        : '(no failed deliveries since then)\n',
    );
}
