// The one place that chooses where Parley's state is kept: every concern kept beside conversations,
// from the data directory's files (src/store/file/, one process) or from PostgreSQL (src/store/pg/,
// any number of instances; DATABASE_URL, docs/postgres.md), behind the interfaces of types.ts and
// shared.ts. The stages and services hold only their policy over these interfaces.
//
// A new concern (the control plane's tables and document) slots in the same way: its interface in
// src/store/, a file backend in file/ and a PostgreSQL one in pg/ (its tables a migration of
// pg/migrate.ts), a field of `Backend`, and one line in each of `openFiles` and `openPg`, opened
// through `keep` so that `close()` closes it. A concern written in the same atomic step as a
// conversation's change (the webhook outbox, D-84) is a member of the Store instead, opened and
// closed by it, and a field of `Backend` from there.
import path from 'node:path';
import type { Logger } from 'pino';
import { CLAIM_TTL_MS } from '../core/claims.ts';
import { TenantRegistry } from '../core/tenants.ts';
import { FileStore } from './file/file-store.ts';
import { FileAnswers } from './file/idempotency.ts';
import { MemoryMinuteWindows } from './file/minute-windows.ts';
import { FileRateCounts } from './file/rate-counts.ts';
import { FileUsageLedger } from './file/usage.ts';
import { FileRefusals } from './file/refusals.ts';
import { FileWidgetOwners } from './file/widget-owners.ts';
import { loadWidgetSecret } from './file/widget-secret.ts';
import { PgIdempotencyAnswers } from './pg/idempotency.ts';
import type { PgStore } from './pg/pg-store.ts';
import { withDriver } from './pg/driver.ts';
import { driverPatched, UNPATCHED_WARNING } from './pg/driver-patch.ts';
import { PgMinuteWindows, PgRateCounts } from './pg/rate-counts.ts';
import { PgUsageLedger } from './pg/usage.ts';
import { PgRefusals } from './pg/refusals.ts';
import { PgWidgetOwners } from './pg/widget-owners.ts';
import { PgTestRuns } from './pg/test-runs.ts';
import { MemoryTestRuns } from './file/test-runs.ts';
import type { TestRuns } from './test-runs.ts';
import { pgWidgetSecret } from './pg/widget-secret.ts';
import type { IdempotencyAnswers, MinuteWindows, RateCounts, UsageLedger, WidgetOwners } from './shared.ts';
import { loadFixtures } from './fixtures.ts';
import type { ControlOptions, ControlPlane } from './control.ts';
import { FileControlPlane } from './file/control.ts';
import { PgControlPlane } from './pg/control.ts';
import type { ChangeEvents } from './types.ts';
import type { WebhookOutbox } from './webhooks.ts';
import type { RefusalLedger } from './refusals.ts';

/** Either store: the Store interface, plus the direct history writes that imports and tests use. */
export type BackendStore = FileStore | PgStore;

/**
 * What a change's events are made from (D-83): the store's outbox (its follows, D-88) and the control
 * plane's document (the endpoints). The control plane opens after the store (its files are under the
 * store's LOCK, its tables in the store's database), so `control` reads it once both are open: a
 * change is made only then.
 */
export interface ChangeSources {
  outbox: WebhookOutbox;
  control: Pick<ControlPlane, 'read'>;
}

export interface BackendOptions<E extends ChangeEvents = ChangeEvents> {
  /** The data directory: the file backend's (PostgreSQL's keeps nothing there). */
  dataDir: string;
  /** postgres://… selects PostgreSQL for every concern; null keeps the data directory. */
  databaseUrl: string | null;
  /** The PostgreSQL connections of this instance. */
  databasePoolSize: number;
  /** Where `fixtures.json` is: the seed of the control plane (D-77), and the knowledge bases. */
  fixturesDir: string;
  /** D-75: how long audit entries are kept. */
  auditRetentionDays: number;
  /** PARLEY_WIDGET_SECRET: when set, D-49's secret for every backend. */
  widgetSecret: string | null;
  /** D-36: how long a response's events stay resumable after its end. */
  responseEventsTtlMs?: number;
  /** D-87: the file store brings back no webhook event older than this from its journal at start-up. */
  webhookRetentionMs: number;
  logger: Logger;
  /** D-84: the events each change makes, given to the store as it opens (the webhooks' wiring). */
  changeEvents: (sources: ChangeSources) => E;
}

/** Every concern kept beside conversations, from one backend, and the one close of them all. */
export interface Backend<E extends ChangeEvents = ChangeEvents> {
  /** The tenant registry (teams, keys, plans, apps): the control plane's document, live (D-78). */
  tenants: TenantRegistry;
  /** D-76: the control plane's document and what is written beside it. */
  control: ControlPlane;
  store: BackendStore;
  /** D-84: the webhook outbox, the store's (written in its changes' atomic steps, closed with it). */
  outbox: WebhookOutbox;
  /** D-84: the events the store makes at each change, as `changeEvents` made them. */
  changeEvents: E;
  usage: UsageLedger;
  /** D-157: requests refused for credits, a rate limit or the storage quota, for the usage report. */
  refusals: RefusalLedger;
  /** D-23's counts, one kind per limit: the REST plans, and D-52's widget budgets apart from them. */
  rateCounts: { plan: RateCounts; widget: RateCounts };
  /** D-52's per-visitor and per-address minute windows. */
  widgetWindows: MinuteWindows;
  idempotency: IdempotencyAnswers;
  widgetOwners: WidgetOwners;
  /** D-49: signs visitor tokens. */
  widgetSecret: Buffer;
  /** D-125: the scripts' step counters and the requests of each test run. */
  testRuns: TestRuns;
  /** Closes every concern, the store last (the others may use its connections); once. */
  close(): Promise<void>;
}

type Concerns = Omit<Backend, 'tenants' | 'close' | 'changeEvents'>;
/** The store's open option: the change events, made once the store's outbox is open. */
type Events = (outbox: WebhookOutbox) => ChangeEvents;
/** Lists what was opened, for `close()` (and for a failed start, which closes what it opened). */
type Keep = <T extends { close(): Promise<void> }>(opened: T) => T;

/** Opens the backend that `o.databaseUrl` names; nothing is left open if any concern fails to open. */
export async function openBackend<E extends ChangeEvents>(o: BackendOptions<E>): Promise<Backend<E>> {
  const fixtures = await loadFixtures(o.fixturesDir);
  const control: ControlOptions = { fixtures, auditRetentionDays: o.auditRetentionDays, log: (m) => o.logger.info(m) };
  const closes: Array<() => Promise<void>> = [];
  const keep: Keep = (opened) => {
    closes.unshift(() => opened.close());
    return opened;
  };
  let closing: Promise<void> | undefined;
  const close = () => (closing ??= closeAll(closes));
  let opened: ControlPlane | undefined;
  const doc = {
    read: () => {
      if (!opened) throw new Error('a change was made before the control plane was open');
      return opened.read();
    },
  };
  let changeEvents: E | undefined;
  const events: Events = (outbox) => (changeEvents = o.changeEvents({ outbox, control: doc }));
  try {
    const concerns = o.databaseUrl ? await openPg(o, o.databaseUrl, keep, control, events) : await openFiles(o, keep, control, events);
    opened = concerns.control;
    const tenants = new TenantRegistry(path.resolve(o.fixturesDir), concerns.control.read(), fixtures.conversations);
    concerns.control.onChange((doc) => tenants.replace(doc));
    return { tenants, ...concerns, changeEvents: changeEvents!, close };
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
}

/** Closes each in turn, the last opened first; a failure does not keep the others open (the first is thrown). */
async function closeAll(closes: Array<() => Promise<void>>): Promise<void> {
  let failed: unknown;
  for (const close of closes) await close().catch((err: unknown) => (failed ??= err));
  if (failed !== undefined) throw failed;
}

async function openFiles(o: BackendOptions<ChangeEvents>, keep: Keep, control: ControlOptions, changeEvents: Events): Promise<Concerns> {
  const dir = o.dataDir;
  const warn = (message: string) => o.logger.warn(message);
  const store = new FileStore({
    dataDir: dir,
    warn,
    responseEventsTtlMs: o.responseEventsTtlMs,
    webhookRetentionMs: o.webhookRetentionMs,
    changeEvents,
  });
  await store.open();
  keep(store);
  const usage = keep(await FileUsageLedger.open(dir));
  const refusals = keep(await FileRefusals.open(dir, warn));
  // Keys whose work was saved (with its claim, in one step) are honoured even if their answer was lost.
  const since = Date.now() - CLAIM_TTL_MS;
  const claims = [...(await store.idempotencyClaims(since)), ...usage.idempotencyClaims(since)];
  return {
    store,
    outbox: store.outbox,
    usage,
    refusals,
    rateCounts: {
      // D-23: day counts live beside the data so that a restart keeps them.
      plan: keep(
        await FileRateCounts.open({
          file: path.join(dir, 'ratelimits.jsonl'),
          onSyncError: (err) => o.logger.warn({ err: err.message }, 'rate-limit journal: fsync failed; counts kept in memory'),
          warn,
        }),
      ),
      widget: keep(await FileRateCounts.open({ file: path.join(dir, 'widget', 'budget.jsonl'), warn })),
    },
    widgetWindows: keep(new MemoryMinuteWindows()),
    idempotency: keep(await FileAnswers.open({ dir: path.join(dir, 'idempotency'), logger: o.logger, claims })),
    widgetOwners: keep(await FileWidgetOwners.open(dir, warn)),
    widgetSecret: o.widgetSecret ? Buffer.from(o.widgetSecret, 'utf8') : await loadWidgetSecret(dir),
    control: keep(await FileControlPlane.open(dir, control)),
    testRuns: keep(new MemoryTestRuns()),
  };
}

async function openPg(
  o: BackendOptions<ChangeEvents>,
  url: string,
  keep: Keep,
  control: ControlOptions,
  changeEvents: Events,
): Promise<Concerns> {
  const warn = (message: string) => o.logger.warn(message);
  // D-151: the driver is loaded only here, so that the file store runs where it did not install.
  const { PgStore } = await withDriver(() => import('./pg/pg-store.ts'));
  // Its schema is migrated by open().
  const store = new PgStore({ url, max: o.databasePoolSize, warn, responseEventsTtlMs: o.responseEventsTtlMs, changeEvents });
  await store.open();
  keep(store);
  if (!driverPatched()) warn(UNPATCHED_WARNING);
  const sql = store.sql;
  return {
    store,
    outbox: store.outbox,
    usage: keep(new PgUsageLedger(sql)),
    refusals: keep(new PgRefusals(sql, warn)),
    // D-23 and D-52 exact across instances.
    rateCounts: { plan: keep(await new PgRateCounts(sql, 'plan').open()), widget: keep(await new PgRateCounts(sql, 'widget').open()) },
    widgetWindows: keep(await new PgMinuteWindows(sql).open()),
    // Answers and claims read by every instance (D-42).
    idempotency: keep(await new PgIdempotencyAnswers(sql).open()),
    widgetOwners: keep(new PgWidgetOwners(sql)),
    // One secret for every instance of a database.
    widgetSecret: o.widgetSecret ? Buffer.from(o.widgetSecret, 'utf8') : await pgWidgetSecret(sql),
    control: keep(await PgControlPlane.open(sql, control, store.responses.owner)),
    // D-125: one step counter per test id for every instance.
    testRuns: keep(await new PgTestRuns(sql).open()),
  };
}
