// A stand-in for the rate limiter of issue 7 (D-23), used by the conformance tests only while this
// branch's reference server has none, so that S8-rate-limit-429 and its mutants are proven anyway.
import fs from 'node:fs/promises';
import path from 'node:path';
import type { RateLimiter } from '../src/http/server.ts';
import { apiError } from '../src/http/errors.ts';
import { startTestServer, FIXTURES_DIR, type TestServer } from './helpers.ts';

interface Plan {
  id: string;
  requests_per_minute: number;
}

export async function stubRateLimiter(): Promise<RateLimiter> {
  const f = JSON.parse(await fs.readFile(path.join(FIXTURES_DIR, 'fixtures.json'), 'utf8')) as { plans: Plan[] };
  const plans = new Map(f.plans.map((p) => [p.id, p.requests_per_minute]));
  const used = new Map<string, number>();
  return {
    take(app) {
      const limit = plans.get(app.plan) ?? Infinity;
      const n = used.get(app.id) ?? 0;
      const headers = { 'x-ratelimit-limit-requests': String(limit), 'x-ratelimit-remaining-requests': String(Math.max(0, limit - n - 1)), 'x-ratelimit-reset-requests': '60s' };
      if (n >= limit) throw apiError('rate_limit_exceeded', 'Rate limit exceeded.', { headers: { ...headers, 'retry-after': '60' } });
      used.set(app.id, n + 1);
      return headers;
    },
  };
}

/** Whether startParley installs a rate limiter of its own (it does once issue 7 is merged). */
export async function hasRealRateLimiter(): Promise<boolean> {
  const s = await startTestServer();
  try {
    const probe = await s.call('POST', `/apps/app_demo/completions`, { prompt: 'ping' });
    return probe.headers.get('x-ratelimit-limit-requests') !== null;
  } finally {
    await s.close();
  }
}

/** A reference server with the real limiter, or with the stand-in while there is none. */
export async function startReferenceServer(real: boolean): Promise<TestServer> {
  return startTestServer(real ? {} : { rateLimiter: await stubRateLimiter() });
}
