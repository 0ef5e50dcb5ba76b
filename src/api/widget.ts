// The widget API's handlers (docs/widget.md), under /widget/v1: a visitor session for the publishable
// key, then the visitor's own conversations (D-48, D-51). The gate (src/pipeline/widget-gate.ts) has
// checked the origin, the credential and the limits before any of these runs.
import type { ConversationT } from '../contract/index.ts';
import { VisitorSessionRequest, WidgetConversationRequest, WidgetMessageRequest, type VisitorSessionT } from '../contract/widget.ts';
import type { RequestContext } from '../http/context.ts';
import { notFound } from '../core/api-errors.ts';
import type { RouteDef } from '../http/router.ts';
import { type Route, withBody } from '../http/surface.ts';
import type { VisitorTokens } from '../pipeline/widget-tokens.ts';
import { appConfig } from '../services/apps.ts';
import type { ConversationService } from '../services/conversations.ts';
import type { ResponseService } from '../services/send/responses.ts';
import type { WidgetOwners } from '../store/shared.ts';
import type { ConversationRecord } from '../store/types.ts';
import { resumeEvents, sendMessage } from './send.ts';

export const WIDGET_BASE_PATH = '/widget/v1';

export interface WidgetRouteOptions {
  tokens: VisitorTokens;
  owners: WidgetOwners;
  conversations: ConversationService;
  responses: ResponseService;
}

/** A row of /widget/v1 that reads a body: its handler takes the body its schema parses (D-118). */
const widgetWithBody = withBody<Route>();

export function widgetRoutes(o: WidgetRouteOptions): RouteDef<Route>[] {
  /** D-48: the visitor's own live conversation; another visitor's answers 404, as an unknown one does. */
  const own = async (ctx: RequestContext): Promise<ConversationRecord> => {
    const id = ctx.params.conversation_id!;
    if ((await o.owners.ownerOf(id)) !== ctx.visitor!.id) throw notFound(`Conversation ${JSON.stringify(id)}`, 'conversation_id');
    return o.conversations.find(ctx.app.id, id);
  };
  /** A response of one of the visitor's conversations; any other answers 404, as an unknown one does. */
  const ownResponse = async (ctx: RequestContext): Promise<string> => {
    const id = ctx.params.response_id!;
    const conversation = await o.responses.conversationOf(ctx.app.id, id);
    if ((await o.owners.ownerOf(conversation)) !== ctx.visitor!.id) throw notFound(`Response ${JSON.stringify(id)}`, 'response_id');
    return id;
  };
  return [
    {
      method: 'POST',
      pattern: '/apps/:app_id/visitors',
      route: widgetWithBody({
        publishable: true,
        body: VisitorSessionRequest,
        handle: async (ctx, body): Promise<VisitorSessionT> => {
          const issued = o.tokens.issue(ctx.app, ctx.key, body.identity, body.previous_token);
          return {
            object: 'visitor_session',
            app_id: ctx.app.id,
            visitor_id: issued.visitor.id,
            token: issued.token,
            expires_at: issued.expires_at,
            external_user_id: issued.visitor.external_user_id,
          };
        },
      }),
    },
    { method: 'GET', pattern: '/apps/:app_id/config', route: { handle: async (ctx) => appConfig(ctx.app) } },
    {
      method: 'POST',
      pattern: '/apps/:app_id/conversations',
      route: widgetWithBody({
        // D-92: a conversation is stored, so it is charged to the widget's budget as a message is.
        counted: true,
        body: WidgetConversationRequest,
        handle: async (ctx, body): Promise<ConversationT> => {
          const visitor = ctx.visitor!;
          // D-51: the user id and metadata come from the signed identity only.
          const created = await o.conversations.create(
            ctx.app.id,
            {
              title: body.title,
              external_user_id: visitor.external_user_id ?? undefined,
              metadata: visitor.metadata ?? undefined,
            },
            undefined,
            true,
          );
          // Claimed before the answer: a crash between the two leaves a conversation whose id no
          // visitor was ever told (reachable by the REST API only), never one given to the wrong visitor.
          await o.owners.claim(created.id, visitor.id);
          return created;
        },
      }),
    },
    {
      method: 'GET',
      pattern: '/apps/:app_id/conversations/:conversation_id',
      route: { handle: async (ctx) => o.conversations.getJson(ctx.app.id, (await own(ctx)).id) },
    },
    {
      method: 'POST',
      pattern: '/apps/:app_id/conversations/:conversation_id',
      route: widgetWithBody({
        needsAgent: true,
        counted: true,
        scenario: 'reply',
        body: WidgetMessageRequest,
        handle: sendMessage(o.responses, {
          // D-4's order: the body (read by the route), then the conversation (404).
          read: async (ctx, body) => {
            const record = await own(ctx);
            // D-50: the agent's metadata is the signed identity's, never the browser's.
            const metadata = ctx.visitor!.metadata ?? undefined;
            return { body: { message: body.message, stream: body.stream ?? true, metadata }, record };
          },
          widget: true,
        }),
      }),
    },
    // Resumable responses (docs/responses.md) for a visitor: the replies of their own conversations only.
    {
      method: 'GET',
      pattern: '/apps/:app_id/responses/:response_id/events',
      route: {
        // D-116: where it starts is read as /v1 reads it, Last-Event-ID first.
        scenario: 'events',
        handle: resumeEvents(o.responses, ownResponse),
      },
    },
    {
      method: 'POST',
      pattern: '/apps/:app_id/responses/:response_id/cancel',
      route: { handle: async (ctx) => o.responses.cancel(ctx.app.id, await ownResponse(ctx)) },
    },
  ];
}
