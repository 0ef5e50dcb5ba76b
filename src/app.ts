// Wires Parley together: tenants, store, services and routes behind one HTTP server.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { borrowedLog, LOG_FLUSH_MS, ownLog } from './app-log.ts';
import { followRunning } from './api/responses.ts';
import { openApiPages, restRoutes } from './api/routes.ts';
import { widgetRoutes } from './api/widget.ts';
import { DASHBOARD_PATH, dashboardPages } from './api/dashboard-assets.ts';
import { widgetPages } from './api/widget-assets.ts';
import { HEALTH_PATH, health } from './api/health.ts';
import { WidgetGate } from './pipeline/widget-gate.ts';
import { VisitorTokens } from './pipeline/widget-tokens.ts';
import { type Config, DEFAULTS } from './config.ts';
import { createHttpServer } from './api/surfaces.ts';
import { TrustedProxies } from './http/client-address.ts';
import type { ParleyHttpServer } from './http/server.ts';
import type { RateLimiter } from './pipeline/stages.ts';
import { AgentRuntime } from './services/agent.ts';
import { AuthService } from './pipeline/auth.ts';
import { CompletionService } from './services/completions.ts';
import { RateLimitService } from './pipeline/rate-limit.ts';
import { IdempotencyService } from './pipeline/idempotency.ts';
import { scenarioOptions } from './pipeline/scenario.ts';
import { ConversationService } from './services/conversations.ts';
import { StorageQuota } from './services/quota.ts';
import { ResponseService } from './services/send/responses.ts';
import { type Backend, openBackend, type BackendStore } from './store/backend.ts';
import { checkListenable } from './http/port.ts';
import type { Store } from './store/types.ts';
import type { UsageLedger } from './store/shared.ts';
import type { Tenants } from './core/tenants.ts';
import type { ControlPlane } from './store/control.ts';
import { adminRoutes } from './api/admin/index.ts';
import type { WebhookAdmin } from './api/admin/webhooks.ts';
import type { WebhookEvents } from './services/webhooks/events.ts';
import { type PublicOrigin, startWebhooks, type WebhookOptions, webhookEvents } from './services/webhooks/wiring.ts';
import { AccountService } from './services/admin/accounts.ts';
import { KeyService } from './services/admin/keys.ts';
import { AppAdminService } from './services/admin/apps.ts';
import { AuditService } from './services/admin/audit.ts';
import { UsageService } from './services/admin/usage.ts';
import { MemberService } from './services/admin/members.ts';
import type { TeamCaps } from './services/admin/caps.ts';
import { assertHashCost } from './services/admin/passwords.ts';
import { CreditService } from './services/credits.ts';
import { AdminConversationService } from './services/admin/conversations.ts';
import { DeletedRetention } from './services/retention.ts';
import { TestRunService } from './services/test-runs.ts';
import { loadScriptBook } from './store/fixtures.ts';

export interface ParleyOptions extends Partial<Config>, Pick<WebhookOptions, 'webhookResolver' | 'webhookPollMs'> {
  logger?: Logger;
  rateLimiter?: RateLimiter;
  /** Ollama's fetch; tests pass the global one so that msw sees the calls. */
  ollamaFetch?: typeof fetch;
  /** How long the OpenAI-compatible engine waits for its server's first byte; tests shorten it. */
  openaiTimeoutMs?: number;
  /** D-18: interval of keep-alive comments on silent streams. */
  keepAliveMs?: number;
  /** Slow-client limits (see createHttpServer); tests shorten them. */
  headersTimeoutMs?: number;
  requestTimeoutMs?: number;
  /** Open SSE streams per app (see src/http/stream-gate.ts). */
  maxStreamsPerApp?: number;
  /** D-38: how long a shutdown lets running requests and replies finish (default 10 s). */
  shutdownGraceMs?: number;
  /** D-36: how long a response's events stay resumable after its end (tests shorten it). */
  responseEventsTtlMs?: number;
  /** The clock of sign-ins and password changes (D-165); tests stop it so that a burst's back-off cannot run out mid-burst. */
  adminClock?: () => number;
}

export interface Parley {
  /** `http://host:port/v1` once listening. */
  baseUrl: string;
  port: number;
  /** This process's store (the Store interface, plus the direct history writes of imports and tests). */
  store: BackendStore;
  tenants: Tenants;
  /** D-76: the control plane (its document is the registry's source). */
  control: ControlPlane;
  /** The routes of /admin/v1 as mounted (tests check each is described and guarded, D-65). */
  adminRoutes: ReadonlyArray<{ method: string; pattern: string; open: boolean; adminOnly: boolean }>;
  logger: Logger;
  http: ParleyHttpServer;
  responses: ResponseService;
  usage: UsageLedger;
  /** Idempotency-Key records (tests wait on `settled`). */
  idempotency: IdempotencyService;
  /** D-122: the server plays the scenarios of requests that carry one. */
  scenarios: boolean;
  /** The playground's URL (docs/widget.md), or null with --no-playground. */
  playgroundUrl: string | null;
  /** The dashboard's URL (docs/dashboard.md), or null with --no-dashboard. */
  dashboardUrl: string | null;
  close(): Promise<void>;
  /**
   * Writes out Parley's own log buffer, waiting at most `ms`. A destination that takes nothing by
   * then (stdout a pipe whose reader stopped reading) is let go, lines dropped, so that neither this
   * nor the synchronous flush at exit can hang. Resolves true if everything was written.
   */
  flushLog(ms: number): Promise<boolean>;
  /** Lets the log destination go at once (an exit that must not wait for it). */
  abandonLog(): void;
}

/** Loads tenants and data, then listens. Nothing is served until the store is fully read. */
export async function startParley(given: ParleyOptions = {}): Promise<Parley> {
  // The defaults are the settings table's (src/settings.ts: what `npm start` and the README say).
  const opts = { ...DEFAULTS, ...definedOnly(given) };
  assertHashCost(opts.passwordHashCost, process.env);
  const { logger, flushLog, abandonLog } = given.logger ? borrowedLog(given.logger) : ownLog(opts.logLevel);
  // D-113: a start that cannot listen leaves nothing behind; the server itself listens only once the store is open.
  await checkListenable(opts.port, opts.host);
  // D-83: where payload URLs point, known once Parley listens (unless --public-url says).
  const origin: PublicOrigin = { at: '' };
  // Every concern kept beside conversations, from the data directory or from PostgreSQL (DATABASE_URL).
  const backend = await openBackend({
    dataDir: opts.dataDir,
    databaseUrl: opts.databaseUrl,
    databasePoolSize: opts.databasePoolSize,
    fixturesDir: opts.fixturesDir,
    auditRetentionDays: opts.auditRetentionDays,
    widgetSecret: opts.widgetSecret,
    responseEventsTtlMs: opts.responseEventsTtlMs,
    webhookRetentionMs: opts.webhookRetentionMs,
    logger,
    changeEvents: webhookEvents({ publicUrl: opts.publicUrl ?? undefined }, origin),
  });
  const { tenants, store, usage } = backend;
  try {
    const { agent, auth, tokens, retention, conversations, credits, responses, completions, idempotency, webhooks, testRuns } =
      await services(backend, opts, logger, origin);
    const playground = opts.playground;
    await beforeServing(backend, { responses, conversations, retention }, logger);
    let closing: Promise<void> | undefined;
    // D-91: a request waits at most this for a store out of reach.
    const bound = { health: store as Store, timeoutMs: opts.storeTimeoutSeconds * 1000 };
    const admin = adminSurface(backend, agent, credits, new AdminConversationService(store, backend.control, retention), opts, {
      endpoints: webhooks.endpoints,
      live: webhooks.live,
    });
    const routes = restRoutes({ conversations, responses, completions, store, testRuns });
    const scenarios = scenarioOptions(opts, tenants);
    const http = createHttpServer({
      store: bound,
      routes,
      admin,
      credits,
      widget: widgetSurface(backend, { tokens, auth, conversations, responses, credits, scenarios, bound, playground, testRuns }),
      pages: new Map<string, () => Promise<unknown>>([
        ...widgetPages({ tenants, playground }),
        ...dashboardPages(opts.dashboard),
        ...openApiPages(routes, admin.routes),
        [HEALTH_PATH, () => health(store, () => closing !== undefined)],
      ]),
      auth,
      logger,
      rateLimiter: opts.rateLimiter ?? new RateLimitService(backend.rateCounts.plan, tenants),
      idempotency,
      // D-122: requests are counted in test runs only where scenarios are on.
      testRuns: scenarios.enabled ? testRuns : undefined,
      scenarios,
      headersTimeoutMs: opts.headersTimeoutMs,
      requestTimeoutMs: opts.requestTimeoutMs,
      maxStreamsPerApp: opts.maxStreamsPerApp,
      keepAliveMs: opts.keepAliveMs,
      proxies: opts.trustProxy === null ? TrustedProxies.none : TrustedProxies.parse(opts.trustProxy),
      refusals: backend.refusals,
    });
    const { addr, host } = await listenOn(http.server, opts.port, opts.host);
    webhooks.listening(`http://${host}:${addr.port}`);
    return {
      baseUrl: `http://${host}:${addr.port}/v1`,
      port: addr.port,
      store,
      tenants,
      control: backend.control,
      adminRoutes: admin.routes.map((r) => ({
        method: r.method,
        pattern: r.pattern,
        open: !!r.route.open,
        adminOnly: !!r.route.adminOnly,
      })),
      logger,
      http,
      responses,
      usage,
      idempotency,
      scenarios: scenarios.enabled,
      playgroundUrl: playground ? `http://${host}:${addr.port}/` : null,
      dashboardUrl: opts.dashboard ? `http://${host}:${addr.port}${DASHBOARD_PATH}` : null,
      flushLog,
      abandonLog,
      close: () =>
        (closing ??= (async () => {
          webhooks.closing();
          await http.close(opts.shutdownGraceMs);
          // D-38: what still runs after the grace period ends `interrupted`, and is saved.
          await responses.interruptAll();
          await responses.stopSweeping();
          await retention.stop();
          await webhooks.stop();
          await backend.close();
          await flushLog(LOG_FLUSH_MS);
        })()),
    };
  } catch (err) {
    await backend.close();
    throw err;
  }
}

/** The widget API's surface (docs/widget.md): its routes, its gate and what it shares with /v1. */
function widgetSurface(
  backend: Backend,
  o: Pick<Awaited<ReturnType<typeof services>>, 'tokens' | 'auth' | 'conversations' | 'responses' | 'credits' | 'testRuns'> & {
    scenarios: ReturnType<typeof scenarioOptions>;
    bound: { health: Store; timeoutMs: number };
    playground: boolean;
  },
) {
  return {
    store: o.bound,
    routes: widgetRoutes({ tokens: o.tokens, owners: backend.widgetOwners, conversations: o.conversations, responses: o.responses }),
    credits: o.credits,
    scenarios: o.scenarios,
    // D-122: requests are counted in test runs only where scenarios are on.
    testRuns: o.scenarios.enabled ? o.testRuns : undefined,
    gate: new WidgetGate({
      tenants: backend.tenants,
      auth: o.auth,
      tokens: o.tokens,
      // D-52: the widget's budgets, counted apart from the REST plans.
      budget: backend.rateCounts.widget,
      windows: backend.widgetWindows,
      allowOwnOrigin: o.playground,
    }),
  };
}

/** Before anything is served: D-38, the replies a killed process left running are saved `interrupted`; D-107, the fixtures' conversations; D-73, the deleted histories past their retention. */
async function beforeServing(
  { tenants, store }: Backend,
  { responses, conversations, retention }: Pick<Awaited<ReturnType<typeof services>>, 'responses' | 'conversations' | 'retention'>,
  logger: Logger,
): Promise<void> {
  const [interrupted] = await Promise.all([responses.recover(), conversations.seed(tenants.conversations ?? [])]);
  if (interrupted > 0) logger.warn({ count: interrupted }, 'responses left running by the last process saved as interrupted');
  if (store.sweepMs !== null) responses.sweep(store.sweepMs);
  const purged = await retention.start((err) =>
    logger.warn({ err: err.message }, 'the sweep of deleted histories failed; the next one tries again'),
  );
  if (purged > 0) logger.info({ count: purged }, 'deleted histories past their retention purged');
}

/** Listens; the address and its host as a URL writes it (`[::1]`). */
async function listenOn(server: Server, port: number, hostName: string): Promise<{ addr: AddressInfo; host: string }> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, hostName, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  return { addr, host: addr.family === 'IPv6' ? `[${addr.address}]` : addr.address };
}

/** The services over the backend's stores: the rules each route and stage applies. */
async function services(backend: Backend<WebhookEvents>, opts: typeof DEFAULTS & ParleyOptions, logger: Logger, origin: PublicOrigin) {
  const { tenants, store, usage } = backend;
  const agent = await AgentRuntime.load(tenants, {
    override: opts.model,
    ollamaHost: opts.ollamaHost,
    ollamaFetch: opts.ollamaFetch,
    openaiBaseUrl: opts.openaiBaseUrl,
    openaiApiKey: opts.openaiApiKey,
    openaiTimeoutMs: opts.openaiTimeoutMs,
    tapes: opts.replayTapes
      ? { replay: opts.replayTapes, timing: opts.tapeTiming }
      : opts.recordTapes
        ? { record: opts.recordTapes }
        : null,
    // The key names the call, never its content (no message content in logs).
    warn: (message) => logger.warn(message),
  });
  // D-70: a key's last use is recorded in memory, written off the request path.
  const auth = new AuthService(tenants, (id, at) => backend.control.keyUse.record(id, at));
  const tokens = new VisitorTokens(backend.widgetSecret);
  const quota = new StorageQuota(store, tenants);
  // D-73: deleted histories kept for the retention, within each app's bound, then purged.
  const retention = new DeletedRetention(store, quota, opts.deletedRetentionDays, () => tenants.apps.keys());
  const conversations = new ConversationService(store, quota, retention);
  // D-74: every reply's usage record carries its team's debit; the balance is checked at a reply's start.
  const credits = new CreditService(usage, tenants, logger);
  const metered = credits.meter();
  const responses = new ResponseService(store, agent, metered, logger, quota);
  // docs/webhooks.md: events written with their changes, delivered from the outbox.
  const webhooks = startWebhooks(
    backend,
    origin,
    { ...opts, publicUrl: opts.publicUrl ?? undefined, teamCaps: teamCaps(opts) },
    logger,
    opts.host,
  );
  const completions = new CompletionService(agent, metered, logger, webhooks.completed);
  // D-30: a keyed retry of a send message running on another instance follows it from the store.
  const idempotency = new IdempotencyService(backend.idempotency, { follow: followRunning(responses) });
  // D-126: the named scripts, checked before anything is served.
  const testRuns = new TestRunService(backend.testRuns, await loadScriptBook(opts.fixturesDir));
  return { agent, auth, tokens, quota, retention, conversations, credits, responses, completions, idempotency, webhooks, testRuns };
}

/** D-173: the caps of each team's records, from their settings. */
function teamCaps(o: Config): TeamCaps {
  return {
    keys: o.teamMaxKeys,
    tokens: o.teamMaxTokens,
    webhookEndpoints: o.teamMaxWebhookEndpoints,
    apps: o.teamMaxApps,
    members: o.teamMaxMembers,
  };
}

/** The admin surface (docs/control-plane.md) over the control plane. */
function adminSurface(
  { control, refusals }: Pick<Backend, 'control' | 'refusals'>,
  agent: AgentRuntime,
  credits: CreditService,
  conversations: AdminConversationService,
  o: Config & Pick<ParleyOptions, 'adminClock'>,
  webhooks?: WebhookAdmin,
) {
  const caps = teamCaps(o);
  const accounts = new AccountService(control, o.passwordHashCost, caps, o.adminClock);
  const routes = adminRoutes({
    accounts,
    keys: new KeyService(control, caps),
    audit: new AuditService(control),
    usage: new UsageService(control, credits, refusals),
    apps: new AppAdminService(control, agent, caps),
    conversations,
    members: new MemberService(control, { hashCost: o.passwordHashCost, caps, dashboard: o.dashboard, now: o.adminClock }),
    webhooks,
    publicUrl: o.publicUrl,
  });
  return { routes, accounts };
}

/** The options actually given: an `undefined` field keeps its default. */
function definedOnly<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}
