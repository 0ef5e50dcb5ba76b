// D-75: every action the audit log records and every kind of actor, in one list each. A module of its
// own, importing nothing, so that the server's writers and its query, the CLI's `--action` and the
// dashboard's suggestions take the same lists.
export const AUDIT_ACTIONS = [
  'session.created',
  'session.failed',
  'session.ended',
  'token.created',
  'token.revoked',
  'member.added',
  'member.invited',
  'member.password_set',
  'member.password_changed',
  'member.updated',
  'member.removed',
  'key.created',
  'key.rolled',
  'key.revoked',
  'key.scenario_set',
  'key.scenario_cleared',
  'app.created',
  'app.updated',
  'webhook_endpoint.created',
  'webhook_endpoint.updated',
  'webhook_endpoint.deleted',
  'webhook_endpoint.disabled',
  'webhook_endpoint.tested',
  'webhook_event.redelivered',
  'conversation.restored',
  'fixtures.merged',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/**
 * D-75: who did it: a member (a session or a token), the service itself (`system`: a fixtures merge,
 * an endpoint disabled), or nobody proven (`anonymous`: a failed sign-in, whose entry's `address`
 * says where from). No entry is written as `token`: a token's changes are its member's (D-68).
 */
export const ACTOR_TYPES = ['member', 'token', 'system', 'anonymous'] as const;
export type ActorType = (typeof ACTOR_TYPES)[number];
