// Before any case: is this target usable at all? A wrong key, a main app that does not answer, an app
// of the target that cannot be what the target says it is: one clear line and exit 2, instead of a page
// of failures. What the interface allows but looks wrong (a 404 for apps.other_team) is only a warning:
// the cases judge it, with their evidence.
import { TransportError, type Exchange, type HttpClient, type OutgoingRequest } from './http.ts';
import type { AppKey, Target, WidgetTarget } from './target.ts';

/** The target cannot be used as it is (exit 2 on the command line). */
export class PreflightError extends Error {
  override name = 'PreflightError';
}

/** The target did not answer at all (exit 2 on the command line). */
export class UnreachableError extends Error {
  override name = 'UnreachableError';
}

function errorType(ex: Exchange): string | undefined {
  const t = (ex.json as { error?: { type?: unknown } } | undefined)?.error?.type;
  return typeof t === 'string' ? t : undefined;
}

function answer(ex: Exchange): string {
  const type = errorType(ex);
  return `${ex.status}${type ? ` ${type}` : ex.json === undefined && ex.text ? ' (not JSON)' : ''}`;
}

const configPath = (app: string) => `/apps/${encodeURIComponent(app)}/config`;

/** Apps the target says `api_key` can use, active and with an agent; `rate_limited` may already be out of requests. */
const USABLE: AppKey[] = ['generative_ui', 'stream_default', 'knowledge_base', 'rate_limited', 'slow', 'small_storage'];

function errorCode(ex: Exchange): string | undefined {
  const c = (ex.json as { error?: { code?: unknown } } | undefined)?.error?.code;
  return typeof c === 'string' ? c : undefined;
}

/**
 * Checks the target; throws PreflightError or UnreachableError, returns the warnings. `widget`: a
 * selected case needs the widget API, so its part of the target is checked too.
 */
export async function preflight(http: HttpClient, target: Target, opts: { widget?: boolean } = {}): Promise<string[]> {
  const warnings: string[] = [];
  const get = async (app: string, key?: string): Promise<Exchange> => {
    try {
      return await http.send({ method: 'GET', path: configPath(app), ...(key ? { key } : {}) });
    } catch (err) {
      if (err instanceof TransportError) throw new UnreachableError(`target ${target.baseUrl} is unreachable: ${err.message}`);
      throw err;
    }
  };

  // The key and the main app: nothing can be judged without them.
  const main = await get(target.appId);
  const url = `GET ${target.baseUrl}${configPath(target.appId)}`;
  if (main.status === 401)
    throw new PreflightError(`the key was refused: ${url} answered ${answer(main)}; check api_key (or --api-key, PARLEY_API_KEY)`);
  if (main.status === 403 && errorType(main) === 'access_denied')
    throw new PreflightError(`api_key has no access to app_id ${target.appId}: ${url} answered ${answer(main)}`);
  if (main.status === 403)
    throw new PreflightError(`app_id ${target.appId} must be an active app with an agent: ${url} answered ${answer(main)}`);
  if (main.status === 404)
    throw new PreflightError(
      `the main app does not answer: ${url} answered ${answer(main)}; check app_id, and that base_url is where the API's /v1 is`,
    );
  if (main.status !== 200 || main.json === undefined)
    throw new PreflightError(
      `the main app does not answer: ${url} answered ${answer(main)}${main.status === 200 ? '; is base_url the API?' : ''}`,
    );

  // The other apps, for what the target claims where the interface leaves one answer.
  for (const name of USABLE) {
    const app = target.apps[name];
    if (!app) continue;
    const ex = await get(app);
    const what = `apps.${name} (${app})`;
    const config = ex.json as { generative_ui?: unknown; stream?: unknown } | undefined;
    if (ex.status === 200) {
      if (name === 'generative_ui' && config?.generative_ui !== true)
        warnings.push(
          `${what}: its config says generative_ui ${JSON.stringify(config?.generative_ui)}; the cases that need an app with generative UI will tell`,
        );
      if (name === 'stream_default' && config?.stream !== true)
        warnings.push(
          `${what}: its config says stream ${JSON.stringify(config?.stream)}; the cases that need the streaming default will tell`,
        );
    } else if (ex.status === 429 && name === 'rate_limited') {
      // Used up by an earlier run this minute: its case accepts that.
    } else if (ex.status === 401 || ex.status === 403 || ex.status === 404) {
      throw new PreflightError(
        `${what} cannot be used: its config answered ${answer(ex)}; the target says api_key can use it, active and with an agent`,
      );
    } else {
      warnings.push(`${what}: its config answered ${answer(ex)}`);
    }
  }

  const other = target.apps.other_team;
  if (other) {
    const ex = await get(other);
    const what = `apps.other_team (${other})`;
    if (ex.status === 404)
      warnings.push(
        `${what} answered 404 to api_key: the interface allows it for another team's app, but it is also what a mistyped id gets`,
      );
    else if (ex.status === 200)
      warnings.push(
        `${what}: api_key can read its config; either it is an app of api_key's own team or the implementation does not check access (the §5 cases will tell)`,
      );
    else if (ex.status !== 403 || errorType(ex) !== 'access_denied')
      warnings.push(`${what} answered ${answer(ex)} to api_key; 403 access_denied was expected`);
    if (target.otherTeamApiKey) {
      const own = await get(other, target.otherTeamApiKey);
      if (own.status === 401)
        throw new PreflightError(`other_team_api_key was refused: the config of ${what} answered ${answer(own)} to it`);
      // Its own team's key reaches it: 200, or a 403 that is about the app (disabled, no agent), not about the key.
      const reached = own.status === 200 || (own.status === 403 && errorType(own) !== 'access_denied');
      if (!reached)
        throw new PreflightError(
          `other_team_api_key must be a key of the team that owns apps.other_team: the config of ${what} answered ${answer(own)} to it`,
        );
    }
  }
  for (const [name, expected] of [
    ['inactive', ['app_inactive']],
    ['no_agent', ['agent_unavailable', 200]],
  ] as const) {
    const app = target.apps[name];
    if (!app) continue;
    const ex = await get(app);
    const fine = (expected as readonly (string | number)[]).includes(ex.status === 403 ? (errorType(ex) ?? '') : ex.status);
    if (!fine)
      warnings.push(
        `apps.${name} (${app}): its config answered ${answer(ex)}; ${name === 'inactive' ? '403 app_inactive' : '403 agent_unavailable (or the config)'} was expected${ex.status === 404 ? ': is the id right?' : ''}`,
      );
  }
  if (opts.widget && target.widget) warnings.push(...(await widgetPreflight(http, target, target.widget)));
  return warnings;
}

/**
 * The widget part of the target (docs/target.md): does widget.base_url answer a browser's preflight
 * from widget.origin for the main app (D-53), and does publishable_key open a visitor session there
 * (D-48)? A preflight is counted by no limit; the session is one request against the address's.
 */
async function widgetPreflight(http: HttpClient, target: Target, w: WidgetTarget): Promise<string[]> {
  const warnings: string[] = [];
  const path = `/apps/${encodeURIComponent(target.appId)}/visitors`;
  const url = `${w.baseUrl}${path}`;
  const send = async (r: Omit<OutgoingRequest, 'path' | 'baseUrl'>): Promise<Exchange> => {
    try {
      return await http.send({ ...r, path, baseUrl: w.baseUrl });
    } catch (err) {
      if (err instanceof TransportError) throw new UnreachableError(`widget.base_url ${w.baseUrl} is unreachable: ${err.message}`);
      throw err;
    }
  };
  const pre = await send({
    method: 'OPTIONS',
    key: null,
    headers: { origin: w.origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type' },
  });
  const what = `OPTIONS ${url} from ${w.origin}`;
  const code = errorCode(pre);
  if (code === 'origin_not_allowed')
    throw new PreflightError(
      `widget.origin ${w.origin} is not an origin the main app's widget allows: ${what} answered ${answer(pre)} (origin_not_allowed)`,
    );
  if (code === 'widget_disabled')
    throw new PreflightError(`app_id ${target.appId} has no widget: ${what} answered ${answer(pre)} (widget_disabled)`);
  if (pre.status === 404)
    throw new PreflightError(
      `the widget API does not answer: ${what} answered ${answer(pre)}; check widget.base_url (the reference's is /widget/v1 on base_url's host)`,
    );
  if (pre.status < 200 || pre.status > 299)
    warnings.push(`${what} answered ${answer(pre)}, not a CORS preflight answer; the widget cases will tell`);
  else if (pre.headers.get('access-control-allow-origin') !== w.origin)
    warnings.push(
      `${what} answered ${pre.status} with Access-Control-Allow-Origin ${JSON.stringify(pre.headers.get('access-control-allow-origin'))}, not the origin; the widget cases will tell`,
    );

  if (!target.publishableKey) {
    warnings.push('the target has widget but no publishable_key: the widget cases need both, and are skipped');
    return warnings;
  }
  const session = await send({ method: 'POST', key: target.publishableKey, body: {}, headers: { origin: w.origin } });
  const token = (session.json as { token?: unknown } | undefined)?.token;
  if (session.status === 401 || session.status === 403)
    throw new PreflightError(
      `publishable_key cannot open a visitor session on the main app's widget: POST ${url} answered ${answer(session)}${errorCode(session) ? ` (${errorCode(session)})` : ''}`,
    );
  if (session.status === 429)
    warnings.push(`POST ${url} answered 429: the widget's limits are used up (an earlier run?); the widget cases may fail with it`);
  else if (session.status !== 200 || typeof token !== 'string')
    warnings.push(`POST ${url} with publishable_key answered ${answer(session)}, not a visitor session; the widget cases will tell`);
  return warnings;
}
