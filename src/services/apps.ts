// App config (§2.8) and metrics (§2.9, D-24): read-only views of the tenants and the store's counters.
import type { AppConfigT, AppMetricsT } from '../contract/index.ts';
import type { AppT } from '../core/tenants.ts';
import type { Store } from '../store/types.ts';

export function appConfig(app: AppT): AppConfigT {
  return {
    app_id: app.id,
    stream: app.stream,
    generative_ui: app.generative_ui,
    agent: {
      name: app.agent.name,
      config: { primary_color: app.agent.config.primary_color, secondary_color: app.agent.config.secondary_color },
    },
  };
}

export async function appMetrics(store: Store, appId: string): Promise<AppMetricsT> {
  const c = await store.appCounters(appId);
  return { total_conversations: c.conversations, total_messages: c.messages, total_users: c.users };
}
