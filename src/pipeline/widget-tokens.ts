// The widget's credentials (docs/widget.md): visitor tokens this server signs (D-49) and the host
// page's signed identities (D-50), both JSON Web Tokens signed with HMAC-SHA256 (RFC 7519, HS256), so
// that a host's server can sign an identity with any JWT library.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { isPlainObject, metadataBytes } from '../contract/index.ts';
import { WIDGET_LIMITS } from '../contract/widget.ts';
import { apiError } from '../core/api-errors.ts';
import type { Visitor } from '../core/callers.ts';
import type { AppT, KeyT } from '../core/tenants.ts';

/** An HS256 JWT of `claims`. */
export function signJwt(claims: Record<string, unknown>, secret: string | Buffer): string {
  const head = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JWT' })).toString('base64url');
  const body = Buffer.from(JSON.stringify(claims)).toString('base64url');
  return `${head}.${body}.${createHmac('sha256', secret).update(`${head}.${body}`).digest('base64url')}`;
}

/** The claims of an HS256 JWT signed with `secret`, or null: malformed, another algorithm, or forged. */
export function verifyJwt(token: string, secret: string | Buffer): Record<string, unknown> | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  const [head, body, sig] = parts as [string, string, string];
  const expected = createHmac('sha256', secret).update(`${head}.${body}`).digest();
  const given = Buffer.from(sig, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    // Only HS256: a token naming `none` or another algorithm is refused even with a valid HMAC.
    const header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8')) as unknown;
    if (!isPlainObject(header) || header.alg !== 'HS256') return null;
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as unknown;
    return isPlainObject(claims) ? claims : null;
  } catch {
    return null;
  }
}

/** The audience of visitor tokens: no other JWT this server or a host signs is ever taken for one. */
const AUDIENCE = 'parley-widget-visitor';

export interface IssuedToken {
  token: string;
  expires_at: number;
  visitor: Visitor;
}

export class VisitorTokens {
  constructor(
    private readonly secret: Buffer,
    private readonly now: () => number = () => Math.floor(Date.now() / 1000),
  ) {}

  /**
   * D-48, D-50: a new token for a visitor of `app`: the identified user's own visitor when a valid
   * identity comes with it, else the visitor of a previous token of this app, as it was (renewal,
   * D-49), else a new anonymous one.
   */
  issue(app: AppT, key: KeyT, identity: string | undefined, previous: string | undefined): IssuedToken {
    let visitor: Visitor;
    if (identity !== undefined) visitor = this.identified(app, identity);
    else {
      const prev = previous === undefined ? null : this.read(previous);
      const renewable = prev && prev.app === app.id && typeof prev.exp === 'number' && prev.exp + WIDGET_LIMITS.renewalSeconds > this.now();
      // A renewal keeps the visitor as verified: an identity is signed for minutes, a tab stays open for hours.
      visitor = renewable
        ? {
            id: String(prev.sub),
            external_user_id: typeof prev.uid === 'string' ? prev.uid : null,
            metadata: isPlainObject(prev.md) ? prev.md : null,
          }
        : { id: `vis_${randomBytes(16).toString('base64url')}`, external_user_id: null, metadata: null };
    }
    const iat = this.now();
    const exp = iat + (app.widget?.token_seconds ?? WIDGET_LIMITS.tokenSeconds);
    const claims: Record<string, unknown> = {
      aud: AUDIENCE,
      app: app.id,
      kid: key.id,
      sub: visitor.id,
      uid: visitor.external_user_id,
      iat,
      exp,
    };
    if (visitor.metadata) claims.md = visitor.metadata;
    return { token: signJwt(claims, this.secret), expires_at: exp, visitor };
  }

  /** D-49: the visitor of a token for `app`, or 401 (forged, expired) / 403 (another app's). */
  verify(token: string, app: AppT): { visitor: Visitor; keyId: string } {
    const c = this.read(token);
    if (!c)
      throw apiError(
        'invalid_visitor_token',
        'Invalid visitor token: ask for one with the publishable key (POST /widget/v1/apps/{app_id}/visitors).',
      );
    if (typeof c.exp !== 'number' || c.exp <= this.now())
      throw apiError('visitor_token_expired', 'The visitor token has expired: ask for a new one, passing this one as previous_token.');
    if (c.app !== app.id) throw apiError('access_denied', `This visitor token is for another app, not ${JSON.stringify(app.id)}.`);
    return {
      visitor: {
        id: String(c.sub),
        external_user_id: typeof c.uid === 'string' ? c.uid : null,
        metadata: isPlainObject(c.md) ? c.md : null,
      },
      keyId: String(c.kid),
    };
  }

  private read(token: string): Record<string, unknown> | null {
    const c = verifyJwt(token, this.secret);
    return c && c.aud === AUDIENCE && typeof c.sub === 'string' && typeof c.app === 'string' ? c : null;
  }

  /** D-50: a host's signed identity: HS256 with the app's identity secret, `sub`, a recent `iat`, optional `metadata`. */
  private identified(app: AppT, identity: string): Visitor {
    const secret = app.widget?.identity_secret;
    if (!secret)
      throw apiError('invalid_identity', `App ${JSON.stringify(app.id)} takes no signed identities (its widget has no identity secret).`, {
        param: 'identity',
      });
    const c = verifyJwt(identity, secret);
    if (!c)
      throw apiError('invalid_identity', "The identity is not a JWT signed (HS256) with this app's identity secret.", {
        param: 'identity',
      });
    const now = this.now();
    if (typeof c.iat !== 'number' || !Number.isFinite(c.iat))
      throw apiError('invalid_identity', 'The identity must carry iat, the Unix time it was signed at.', { param: 'identity' });
    if (
      c.iat < now - WIDGET_LIMITS.identityMaxAgeSeconds ||
      c.iat > now + WIDGET_LIMITS.clockSkewSeconds ||
      (typeof c.exp === 'number' && c.exp <= now)
    ) {
      throw apiError(
        'identity_expired',
        `The identity has expired: sign a new one (it is valid for ${WIDGET_LIMITS.identityMaxAgeSeconds} s after its iat).`,
        { param: 'identity' },
      );
    }
    if (typeof c.sub !== 'string' || c.sub.length < 1 || c.sub.length > 256) {
      throw apiError('invalid_identity', "The identity's sub (the external user id) must be a string of 1 to 256 characters.", {
        param: 'identity',
      });
    }
    let metadata: Record<string, unknown> | null = null;
    if (c.metadata !== undefined) {
      if (!isPlainObject(c.metadata) || metadataBytes(c.metadata) > WIDGET_LIMITS.identityMetadataBytes) {
        throw apiError(
          'invalid_identity',
          `The identity's metadata must be an object of at most ${WIDGET_LIMITS.identityMetadataBytes} bytes of JSON.`,
          { param: 'identity' },
        );
      }
      metadata = c.metadata;
    }
    // The same user is the same visitor on every device: the id is derived from the app and the user.
    const id = `vis_${createHmac('sha256', this.secret).update(`${app.id}\0${c.sub}`).digest('base64url').slice(0, 22)}`;
    return { id, external_user_id: c.sub, metadata };
  }
}
