// Webhooks put together (docs/webhooks.md): the events the store writes with each change, the
// completions' events, the delivery worker over the store's outbox and the endpoints' service for the
// admin surface. The settings are D-82's and D-85…D-87's, from the settings' table (src/settings.ts).
import type { Logger } from 'pino';
import type { CompletionT } from '../../contract/index.ts';
import type { ChangeSources } from '../../store/backend.ts';
import type { ControlPlane } from '../../store/control.ts';
import type { WebhookOutbox } from '../../store/webhooks.ts';
import { addressPolicy, type Resolver, systemResolver } from './addresses.ts';
import { EndpointService } from './endpoints.ts';
import { WebhookEvents } from './events.ts';
import { DeliveryWorker } from './worker.ts';
import type { TeamCaps } from '../admin/caps.ts';

export interface WebhookOptions {
  /** D-85: delays in seconds before each retry, each from the end of the attempt before it (`--webhook-retry-schedule`). */
  webhookRetrySchedule: number[];
  /** D-85: an attempt's bound (`--webhook-timeout-ms`). */
  webhookTimeoutMs: number;
  /** D-82: every non-public address allowed (`--webhook-allow-private`). */
  webhookAllowPrivate: boolean;
  /** D-86: an endpoint failing this long is disabled (`--webhook-disable-after-days`). */
  webhookDisableAfterMs: number;
  /** D-87: finished events and their attempts are kept this long (`--webhook-retention-days`). */
  webhookRetentionMs: number;
  /** D-169: the most endpoints an app may have (`--webhook-endpoints-per-app`). */
  webhookEndpointsPerApp: number;
  /** D-82: tests inject a resolver (a name mapped to a refused address, no socket opened). */
  webhookResolver?: Resolver;
  /** How often an instance looks for due deliveries besides its own wake-ups (default 1 s). */
  webhookPollMs?: number;
  /** D-83: the public origin of `url` in a payload cut short (default: where Parley listens). */
  publicUrl?: string;
  /** D-173: the caps of each team's records (its webhook endpoints'). */
  teamCaps: TeamCaps;
}

/** Where payload URLs point (D-83): `--public-url`, else where Parley listens, once it does. */
export interface PublicOrigin {
  at: string;
}

/** D-84: the events of each change, made as the store opens (openBackend's `changeEvents`). */
export function webhookEvents(o: Pick<WebhookOptions, 'publicUrl'>, origin: PublicOrigin) {
  return ({ outbox, control }: ChangeSources) =>
    new WebhookEvents(control, () => (o.publicUrl ?? origin.at).replace(/\/$/, ''), outbox.follows);
}

/** The backend's parts webhooks run on: its outbox, the events its store makes, the endpoints. */
interface WebhookBackend {
  outbox: WebhookOutbox;
  changeEvents: WebhookEvents;
  control: ControlPlane;
}

export function startWebhooks(
  { outbox, changeEvents: events, control }: WebhookBackend,
  origin: PublicOrigin,
  o: WebhookOptions,
  log: Logger,
  host: string,
) {
  // D-88: live streams end when Parley starts closing (they never end by themselves).
  const closing = new AbortController();
  const policy = addressPolicy(host, o.publicUrl, o.webhookAllowPrivate);
  const resolve = o.webhookResolver ?? systemResolver;
  const worker = new DeliveryWorker(outbox, control, {
    scheduleS: o.webhookRetrySchedule,
    timeoutMs: o.webhookTimeoutMs,
    disableAfterMs: o.webhookDisableAfterMs,
    policy,
    resolve,
    concurrency: 16,
    pollMs: o.webhookPollMs ?? 1000,
    retentionMs: o.webhookRetentionMs,
    log,
  });
  const endpoints = new EndpointService(control, outbox, policy, resolve, o.teamCaps, () => worker.kick(), o.webhookEndpointsPerApp);
  return {
    /** For the admin surface's routes (src/api/admin/webhooks.ts): endpoints, and the live stream's sources. */
    endpoints,
    live: { outbox, events, control, closing: closing.signal },
    /** D-83: a completion's event, written once its usage is saved. */
    completed: async (appId: string, c: CompletionT) => {
      const made = events.make(appId, c.status === 'completed' ? 'completion.completed' : 'completion.failed', c, `/completions/${c.id}`);
      // The completion is answered whatever happens to its event (a full disk is logged, never the answer's fault).
      if (made.length > 0)
        await outbox.add(made).catch((err: Error) => log.error({ err: err.message, completion_id: c.id }, 'webhook event not recorded'));
    },
    /** Parley listens at `at` (`http://host:port`): the origin of payload URLs; delivery starts. */
    listening(at: string) {
      origin.at = at;
      worker.start();
    },
    /** Ends the live streams, so that a shutdown does not wait for them. */
    closing: () => closing.abort(),
    stop: () => worker.stop(),
  };
}
