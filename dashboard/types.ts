// The admin surface's answers as the dashboard reads them (src/contract/admin.ts is the source).
export interface Member {
  id: string;
  email: string;
  name: string | null;
  role: 'admin' | 'viewer';
}
export interface Session {
  member: Member;
  team: { id: string; name: string };
  csrf_token: string;
  expires_at: number;
}
export interface List<T> {
  data: T[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}
export interface ApiKey {
  id: string;
  type: 'secret' | 'publishable';
  name: string;
  redacted: string;
  created_at: number;
  created_by: { email: string } | null;
  last_used_at: number | null;
  expires_at: number | null;
  revoked_at: number | null;
  rolled_to: string | null;
}
export interface ApiKeyCreated extends ApiKey {
  key: string;
}
export interface Conversation {
  id: string;
  title: string | null;
  external_user_id: string | null;
  created_at: number;
  updated_at?: number;
  message_count: number;
  deleted_at: number | null;
  history: 'live' | 'kept' | 'purged';
  history_purge_at?: number | null;
  history_purged_at?: number | null;
  metadata?: Record<string, unknown>;
}
export interface Item {
  id: string;
  type: string;
  created_at: number;
  role?: string | null;
  content?: { type?: string; text?: string }[] | null;
  name?: string | null;
  arguments?: string | null;
  data?: unknown;
  status?: string;
  response_id?: string;
}
export interface ResponseRecord {
  id: string;
  created_at: number;
  status: string;
  error: { code?: string; message?: string } | null;
  usage: { input_tokens?: number; output_tokens?: number; total_tokens?: number } | null;
}
export interface ConversationDetail extends Conversation {
  items: Item[];
  responses: ResponseRecord[];
}
export interface AuditEntry {
  id: string;
  created_at: number;
  action: string;
  actor: { type: string; email: string | null };
  address: string | null;
  target: { type: string; id: string } | null;
  changes: Record<string, [unknown, unknown]>;
}
export interface UsageDay {
  app_id: string;
  date: string;
  requests: number;
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  credits: number;
}
export interface Balance {
  credits: number;
  allowance: number;
  used: number;
  period_start: number;
  period_end: number;
  limit: 'soft' | 'hard';
  plans: { plan: string; apps: number; monthly_allowance: number; price_per_1k_tokens: number; limit: string }[];
}
export interface WebhookEndpoint {
  id: string;
  app_id: string;
  url: string;
  events: string[];
  description: string;
  enabled: boolean;
  disabled_reason: 'manual' | 'gone' | 'failing' | null;
  created_at: number;
  updated_at: number;
}
export interface WebhookAttempt {
  id: string;
  created_at: number;
  status: number | null;
  duration_ms: number;
  response: string;
  error: string | null;
}
export interface WebhookDelivery {
  id: string;
  event_id: string;
  event_type: string;
  endpoint_id: string;
  state: 'pending' | 'succeeded' | 'failed' | 'skipped';
  attempts: number;
  next_attempt_at: number | null;
  created_at: number;
  last_attempt: WebhookAttempt | null;
  attempt_log: WebhookAttempt[];
}
export interface WebhookEvent {
  id: string;
  type: string;
  created_at: number;
  app_id: string;
  data: Record<string, unknown>;
}
