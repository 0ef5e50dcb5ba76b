// Wires Parley together: tenants, store, services and routes behind one HTTP server.
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { appRoutes } from './api/apps.ts';
import { conversationRoutes } from './api/conversations.ts';
import { followRunning, responseRoutes } from './api/responses.ts';
import { WIDGET_BASE_PATH, widgetRoutes } from './api/widget.ts';
import { widgetPages } from './api/widget-assets.ts';
import { HEALTH_PATH, health } from './api/health.ts';
import { WidgetGate, sharedMinuteLimits, type MinuteLimits } from './pipeline/widget-gate.ts';
import { VisitorTokens, loadWidgetSecret } from './pipeline/widget-tokens.ts';
import { VisitorConversations, type WidgetOwners } from './services/widget-owners.ts';
import type { Config } from './config.ts';
import { OPENAPI_PATH, openApiDocument } from './contract/openapi.ts';
import { createHttpServer, type ParleyHttpServer, type RateLimiter } from './http/server.ts';
import { AgentRuntime } from './services/agent.ts';
import { AuthService } from './pipeline/auth.ts';
import { CompletionService } from './services/completions.ts';
import { RateLimitService, SharedRateLimitService } from './pipeline/rate-limit.ts';
import { IDEMPOTENCY_TTL_MS, IdempotencyService } from './pipeline/idempotency.ts';
import { ConversationService } from './services/conversations.ts';
import { StorageQuota } from './services/quota.ts';
import { ResponseService } from './services/responses.ts';
import { FileUsageLedger, type UsageLedger } from './services/usage.ts';
import { FileStore } from './store/file-store.ts';
import { PgStore } from './store/pg-store.ts';
import { PgIdempotencyAnswers } from './store/pg/idempotency.ts';
import { PgRateCounts } from './store/pg/rate-counts.ts';
import { PgUsageLedger } from './store/pg/usage.ts';
import { PgWidgetOwners, pgWidgetSecret } from './store/pg/widget-owners.ts';
import { loadTenants } from './store/tenants.ts';
import type { Tenants } from './core/tenants.ts';

export interface ParleyOptions extends Partial<Config> {
  logger?: Logger;
  rateLimiter?: RateLimiter;
  /** Ollama's fetch; tests pass the global one so that msw sees the calls. */
  ollamaFetch?: typeof fetch;
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
}

export interface Parley {
  /** `http://host:port/v1` once listening. */
  baseUrl: string;
  port: number;
  /** This process's store (the Store interface, plus the file store's bulk import and history writes). */
  store: FileStore | PgStore;
  tenants: Tenants;
  logger: Logger;
  http: ParleyHttpServer;
  responses: ResponseService;
  usage: UsageLedger;
  /** Idempotency-Key records (tests wait on `settled`). */
  idempotency: IdempotencyService;
  /** The playground's URL (docs/widget.md), or null with --no-playground. */
  playgroundUrl: string | null;
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

/** How long close() lets buffered log lines take to leave. */
const LOG_FLUSH_MS = 2_000;

/** Loads tenants and data, then listens. Nothing is served until the store is fully read. */
export async function startParley(opts: ParleyOptions = {}): Promise<Parley> {
  // Our own logger writes to stdout asynchronously, in batches of 4 KiB or every 50 ms, whichever
  // comes first, instead of one blocking write(2) per request (the largest Parley-owned item in the
  // get profile, docs/benchmarks.md); a developer still sees a line within 50 ms. close() flushes
  // it, and pino flushes it synchronously on process exit, so no line is lost, unless the destination
  // takes nothing for LOG_FLUSH_MS (a pipe nobody reads): then it is let go, so that exit cannot hang (D-26).
  const ownDest = opts.logger ? undefined : pino.destination({ dest: 1, sync: false, minLength: 4096, periodicFlush: 50 });
  const ownLogger = ownDest && pino({ level: opts.logLevel ?? 'info' }, ownDest);
  // As pino does on EPIPE: later lines and the flush at exit become no-ops.
  let abandoned = false;
  const abandonLog = () => {
    if (!ownDest) return;
    abandoned = true;
    ownDest.write = () => true;
    ownDest.flushSync = () => {};
  };
  const flushLog = (ms: number) =>
    new Promise<boolean>((resolve) => {
      if (!ownDest) return resolve(true);
      if (abandoned) return resolve(false);
      const timer = setTimeout(() => {
        abandonLog();
        resolve(false);
      }, ms);
      // Called back once the buffer is written (an fsync error on a pipe or terminal is no loss).
      ownDest.flush(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  const logger = opts.logger ?? ownLogger!;
  const tenants = await loadTenants(opts.fixturesDir ?? 'fixtures/');
  const warn = (message: string) => logger.warn(message);
  // DATABASE_URL selects PostgreSQL (docs/postgres.md); its schema is migrated by open().
  const store = opts.databaseUrl
    ? new PgStore({ url: opts.databaseUrl, max: opts.databasePoolSize, warn, responseEventsTtlMs: opts.responseEventsTtlMs })
    : new FileStore({ dataDir: opts.dataDir ?? './data', warn, responseEventsTtlMs: opts.responseEventsTtlMs });
  await store.open();
  const dataDir = opts.dataDir ?? './data';
  // The shared state (docs/postgres.md): in the database with the store, so that any instance answers
  // any request; else in the data directory, as the file store.
  const pg = store instanceof PgStore ? store.sql : undefined;
  const fileUsage = pg ? undefined : new FileUsageLedger(dataDir);
  const usage: UsageLedger = pg ? new PgUsageLedger(pg) : fileUsage!;
  let limits: (RateLimiter & { close(): Promise<void> }) | undefined;
  let idempotency: IdempotencyService | undefined;
  let widgetBudget: (RateLimiter & { close(): Promise<void> }) | undefined;
  let owners: WidgetOwners | undefined;
  let widgetWindows: PgRateCounts | undefined;
  let windows: MinuteLimits | undefined;
  try {
    await fileUsage?.open();
    const agent = await AgentRuntime.load(tenants, { override: opts.model, ollamaHost: opts.ollamaHost, ollamaFetch: opts.ollamaFetch });
    const budgetPlans = { plans: WidgetGate.budgetPlans(tenants) };
    if (pg) {
      // D-23 and D-52 exact across instances; Idempotency-Key answers and claims read by every instance.
      if (!opts.rateLimiter) limits = new SharedRateLimitService(await new PgRateCounts(pg, 'plan').open(), tenants);
      // D-30: a keyed retry of a send message running on another instance follows it from the store.
      idempotency = new IdempotencyService(await new PgIdempotencyAnswers(pg).open(), {
        follow: (retry, id) => followRunning(responses)(retry, id),
      });
      widgetBudget = new SharedRateLimitService(await new PgRateCounts(pg, 'widget').open(), budgetPlans);
      owners = new PgWidgetOwners(pg);
      // D-52's per-visitor and per-address minutes, counted once for every instance.
      widgetWindows = await new PgRateCounts(pg, 'widget-window').open();
      windows = sharedMinuteLimits(widgetWindows);
    } else {
      // D-23: day counts live beside the data so that a restart keeps them.
      if (!opts.rateLimiter)
        limits = await RateLimitService.open({
          file: path.join(dataDir, 'ratelimits.jsonl'),
          tenants,
          onSyncError: (err) => logger.warn({ err: err.message }, 'rate-limit journal: fsync failed; counts kept in memory'),
          warn,
        });
      // Keys whose work was saved (with its claim, in one step) are honoured even if their answer was lost.
      const since = Date.now() - IDEMPOTENCY_TTL_MS;
      idempotency = await IdempotencyService.open({
        dir: path.join(dataDir, 'idempotency'),
        logger,
        claims: [...(await store.idempotencyClaims(since)), ...fileUsage!.idempotencyClaims(since)],
      });
      // The widget API (docs/widget.md): its budgets counted apart from the REST plans (D-52).
      widgetBudget = await RateLimitService.open({ file: path.join(dataDir, 'widget', 'budget.jsonl'), tenants: budgetPlans, warn });
      owners = await VisitorConversations.open(dataDir, warn);
    }
    const auth = new AuthService(tenants);
    // D-49: one signing secret for every instance of a database, else the data directory's.
    const secret = pg && !opts.widgetSecret ? await pgWidgetSecret(pg) : await loadWidgetSecret(dataDir, opts.widgetSecret);
    const tokens = new VisitorTokens(secret);
    const playground = opts.playground ?? true;
    const quota = new StorageQuota(store, tenants);
    const conversations = new ConversationService(store, quota);
    const responses = new ResponseService(store, agent, usage, logger, quota);
    const completions = new CompletionService(agent, usage, logger);
    // Before anything is served: D-38, the replies a killed process left running are saved `interrupted`; D-107, the fixtures' conversations.
    const [interrupted] = await Promise.all([responses.recover(), conversations.seed(tenants.conversations ?? [])]);
    if (interrupted > 0) logger.warn({ count: interrupted }, 'responses left running by the last process saved as interrupted');
    if (store.sweepMs) responses.sweep(store.sweepMs);
    let closing: Promise<void> | undefined;
    const http = createHttpServer({
      routes: [...conversationRoutes(conversations), ...appRoutes(store), ...responseRoutes({ conversations, responses, completions })],
      surfaces: [
        {
          basePath: WIDGET_BASE_PATH,
          routes: widgetRoutes({ tokens, owners, conversations, responses }),
          gate: new WidgetGate({ tenants, auth, tokens, budget: widgetBudget, windows, allowOwnOrigin: playground }),
        },
      ],
      pages: new Map<string, () => Promise<unknown>>([
        ...widgetPages({ tenants, playground }),
        [OPENAPI_PATH, async () => openApiDocument()],
        [HEALTH_PATH, () => health(store, () => closing !== undefined)],
      ]),
      auth,
      logger,
      rateLimiter: opts.rateLimiter ?? limits,
      idempotency,
      headersTimeoutMs: opts.headersTimeoutMs,
      requestTimeoutMs: opts.requestTimeoutMs,
      maxStreamsPerApp: opts.maxStreamsPerApp,
      keepAliveMs: opts.keepAliveMs,
    });
    await new Promise<void>((resolve, reject) => {
      http.server.once('error', reject);
      http.server.listen(opts.port ?? 8787, opts.host ?? '127.0.0.1', () => {
        http.server.off('error', reject);
        resolve();
      });
    });
    const addr = http.server.address() as AddressInfo;
    const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
    return {
      baseUrl: `http://${host}:${addr.port}/v1`,
      port: addr.port,
      store,
      tenants,
      logger,
      http,
      responses,
      usage,
      idempotency,
      playgroundUrl: playground ? `http://${host}:${addr.port}/` : null,
      flushLog,
      abandonLog,
      close: () =>
        (closing ??= (async () => {
          await http.close(opts.shutdownGraceMs);
          // D-38: what still runs after the grace period ends `interrupted`, and is saved.
          await responses.interruptAll();
          await responses.stopSweeping();
          await usage.close();
          await limits?.close();
          await idempotency?.close();
          await widgetBudget?.close();
          await owners?.close();
          await widgetWindows?.close();
          await store.close();
          await flushLog(LOG_FLUSH_MS);
        })()),
    };
  } catch (err) {
    await usage.close();
    await limits?.close();
    await idempotency?.close();
    await widgetBudget?.close();
    await owners?.close();
    await widgetWindows?.close();
    await store.close();
    throw err;
  }
}
