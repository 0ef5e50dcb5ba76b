// GET /healthz, outside the versioned API and without a key, for load balancers (docs/postgres.md,
// D-44): 200 when the store answers, 503 while shutting down or when the store does not answer.
// While starting nothing listens yet, which a load balancer sees as down too.
import { Asset } from '../http/reply.ts';
import type { Store } from '../store/types.ts';

export const HEALTH_PATH = '/healthz';

/** How long the store has to answer before the instance is reported down. */
const PING_TIMEOUT_MS = 2_000;

const answer = (status: number, body: Record<string, string>) =>
  new Asset('application/json; charset=utf-8', JSON.stringify(body), { 'cache-control': 'no-store' }, status);

export async function health(store: Store & { ping?(): Promise<void> }, closing: () => boolean): Promise<Asset> {
  if (closing()) return answer(503, { status: 'shutting_down' });
  if (!store.ping) return answer(200, { status: 'ok' });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      store.ping(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), PING_TIMEOUT_MS);
      }),
    ]);
    return answer(200, { status: 'ok' });
  } catch {
    // D-5: the answer names no cause (a host name, a driver message).
    return answer(503, { status: 'store_unavailable' });
  } finally {
    clearTimeout(timer);
  }
}
