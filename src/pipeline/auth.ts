// Authentication and app access (§5, D-4, D-6): who is calling, and may they use this app.
import { hash, timingSafeEqual } from 'node:crypto';
import { checkFormat } from '../core/api-keys.ts';
import { ApiError, apiError } from '../core/api-errors.ts';
import type { AppT, Tenants, KeyT } from '../core/tenants.ts';

function hashKey(key: string): Buffer {
  // One-shot hash: cheaper than createHash().update().digest() on every request (docs/benchmarks.md).
  return hash('sha256', key, 'buffer');
}

export class AuthService {
  private keys: Array<{ key: KeyT; hash: Buffer }> = [];
  /** The registry's version the hashes were taken from (D-78: rebuilt when it moves). */
  private builtFrom = Number.NaN;

  /** `onUse` learns which key authenticated a request (D-70's last use, recorded off the request path). */
  constructor(
    private readonly tenants: Tenants,
    private readonly onUse: (keyId: string, at: number) => void = () => {},
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * D-6: a missing header, another scheme or an unknown key is 401; the key itself is never echoed.
   * D-70: a key of the checksummed shape whose checksum is wrong is refused before any look-up; a
   * revoked key, or one past its expiry (a rolled key's grace period), is refused like an unknown one.
   */
  authenticate(authorization: string | undefined): KeyT {
    const found = this.resolve(authorization);
    if (found instanceof ApiError) throw found;
    this.onUse(found.id, this.now());
    return found;
  }

  /**
   * D-127: the valid key `authorization` names, or undefined, without recording its use: the widget API
   * finds a publishable key's test run before its gate judges the credential.
   */
  identify(authorization: string | undefined): KeyT | undefined {
    const found = this.resolve(authorization);
    return found instanceof ApiError ? undefined : found;
  }

  /** The key `authorization` names, or the 401 that refuses it (D-6, D-70). */
  private resolve(authorization: string | undefined): KeyT | ApiError {
    const match = /^Bearer +(\S+) *$/i.exec(authorization ?? '');
    if (!match) {
      return apiError(
        'invalid_api_key',
        authorization
          ? 'The Authorization header must be "Bearer <secret key>".'
          : 'Missing API key: send it as Authorization: Bearer <secret key>.',
      );
    }
    const text = match[1]!;
    if (checkFormat(text) === 'mistyped')
      return apiError(
        'invalid_api_key',
        'Invalid API key: its checksum (the last 6 characters) does not match; check that it was copied whole.',
      );
    if (this.builtFrom !== this.tenants.version) {
      this.keys = this.tenants.keys.map((key) => ({ key, hash: Buffer.from(key.sha256, 'hex') }));
      this.builtFrom = this.tenants.version;
    }
    const presented = hashKey(text);
    // Every stored hash is compared, in constant time, so timing says nothing about which matched.
    let found: KeyT | undefined;
    for (const { key, hash } of this.keys) {
      if (timingSafeEqual(presented, hash)) found = key;
    }
    if (!found) return apiError('invalid_api_key', 'Invalid API key.');
    const now = this.now();
    if (found.revoked_at !== null && found.revoked_at * 1000 <= now) return apiError('invalid_api_key', 'This API key was revoked.');
    if (found.expires_at !== null && found.expires_at * 1000 <= now) return apiError('invalid_api_key', 'This API key has expired.');
    return found;
  }

  /** D-4 order after authentication: app known and ours (404/403), active (403), agent if needed (403). */
  authorizeApp(key: KeyT, appId: string, needsAgent: boolean): AppT {
    if (key.type === 'publishable') {
      throw apiError(
        'publishable_key',
        'Publishable keys only work with the messenger widget; use a secret key (sk_live_…) for the REST API.',
      );
    }
    const app = this.tenants.apps.get(appId);
    if (!app) throw apiError('not_found', `App ${JSON.stringify(appId)} not found.`, { param: 'app_id' });
    if (app.team_id !== key.team_id) throw apiError('access_denied', `This API key has no access to app ${JSON.stringify(appId)}.`);
    if (!app.active) throw apiError('app_inactive', `App ${JSON.stringify(appId)} is disabled.`);
    if (needsAgent && !app.agent.active) {
      throw apiError('agent_unavailable', `App ${JSON.stringify(appId)} has no active agent configured.`);
    }
    return app;
  }
}
