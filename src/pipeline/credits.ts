// D-74: the credits stage of the routes that run the agent (send message, completion, the widget's
// send message): a hard-limit plan's team at zero is refused before anything else is counted or
// saved; a soft one's answer carries the warning header. The policy is src/services/credits.ts.
import type { AppT } from '../core/tenants.ts';
import type { Stage } from '../http/compose.ts';
import type { Call } from '../http/context.ts';

export interface CreditCheck {
  /** The headers of the reply's answer, or throws 429 `credits_exhausted`. */
  admit(app: AppT): Record<string, string> | Promise<Record<string, string>>;
}

export function credits(check: CreditCheck): Stage<Call> {
  // Not async: with the team's balance cached (nearly always), the check costs no promise of its own.
  return (ctx, next) => {
    if (!ctx.app) throw new Error('credits runs once the app is known');
    const found = check.admit(ctx.app);
    if (found instanceof Promise)
      return found.then((headers) => {
        Object.assign(ctx.answerHeaders, headers);
        return next();
      });
    Object.assign(ctx.answerHeaders, found);
    return next();
  };
}
