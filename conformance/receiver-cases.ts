// The cases of `parley webhooks check-receiver` (docs/webhooks.md, "Checking your receiver", D-175):
// what is sent to a team's webhook receiver and what it must answer. Deliveries are signed by the
// server's own code (src/core/webhook-signature.ts) and their body is an event checked against the
// contract's schemas, so that the kit sends what Parley sends and describes none of it again.
import { randomBytes } from 'node:crypto';
import { WebhookEventView } from '../src/contract/admin-webhooks.ts';
import { Conversation } from '../src/contract/resources.ts';
import { newId } from '../src/core/ids.ts';
import { signedHeaders } from '../src/core/webhook-signature.ts';

/** One request of a case: the `webhook-*` headers it carries and its raw body. */
export interface Delivery {
  headers: Record<string, string>;
  body: string;
}

/** What a case is sent with: the receiver's signing key, another key, the time and the event's app. */
export interface Signing {
  key: Buffer;
  /** A key the receiver does not hold (a rolled key's, or a stranger's). */
  otherKey: Buffer;
  nowS: number;
  appId: string;
}

export interface ReceiverCase {
  id: string;
  /** `accept`: every answer must be a 2xx; `refuse`: a 4xx (D-175). */
  expect: 'accept' | 'refuse';
  /** What it sends, in words: `a delivery signed with another key only`. */
  sends: string;
  description: string;
  /** Standard Webhooks 1.0's section, or the decision, that the case holds the receiver to. */
  clauses: string[];
  deliveries(s: Signing): Delivery[];
}

/** D-175: how far from now the stale and the future timestamps are, twice Standard Webhooks' 5 minutes. */
export const SKEW_S = 600;

const SW = 'Standard Webhooks 1.0';

/**
 * A `conversation.created` event as Parley sends it (D-83): its envelope and its `data` checked with
 * the contract's schemas, serialized in the server's key order, compact.
 */
export function eventBody(s: Pick<Signing, 'nowS' | 'appId'>, id: string): string {
  const data = {
    id: newId('conversation'),
    object: 'conversation',
    created_at: s.nowS,
    external_user_id: null,
    title: 'check-receiver',
    generated_title: {},
    metadata: {},
  };
  const event = { id, object: 'event', type: 'conversation.created', created_at: s.nowS, app_id: s.appId, data };
  Conversation.parse(data);
  WebhookEventView.parse(event);
  return JSON.stringify(event);
}

/** A delivery signed with `keys` (in that order) at `timestamp`: a new event each time. */
function signed(s: Signing, keys: Buffer[], timestamp = s.nowS): Delivery {
  const id = newId('event');
  const body = eventBody(s, id);
  return { headers: signedHeaders(keys, id, timestamp, body), body };
}

/** A signed delivery with one of its headers left out. */
function without(header: string): (s: Signing) => Delivery[] {
  return (s) => {
    const d = signed(s, [s.key]);
    const { [header]: _left, ...headers } = d.headers;
    return [{ ...d, headers }];
  };
}

/** A case of a delivery the receiver must accept (each time, when it is sent more than once). */
function accept(id: string, sends: string, clauses: string[], deliveries: ReceiverCase['deliveries']): ReceiverCase {
  return { id, expect: 'accept', sends, description: `${sends} is accepted`, clauses, deliveries };
}

function refuse(id: string, sends: string, clauses: string[], deliveries: ReceiverCase['deliveries']): ReceiverCase {
  return { id, expect: 'refuse', sends, description: `${sends} is refused`, clauses, deliveries };
}

export const RECEIVER_CASES: readonly ReceiverCase[] = [
  accept('R-signed', 'a delivery signed as Parley signs it', [`${SW}: Signature scheme`, 'D-80', 'D-83'], (s) => [signed(s, [s.key])]),
  accept(
    'R-key-roll',
    "a delivery with two signatures, another key's first and the right one second",
    [`${SW}: Webhook headers (zero downtime secret rotation)`, 'D-80'],
    (s) => [signed(s, [s.otherKey, s.key])],
  ),
  accept(
    'R-duplicate-id',
    'the same delivery sent twice, with the same webhook-id,',
    [`${SW}: Verifying signatures (webhook-id as an idempotency key)`, 'D-85'],
    (s) => {
      const d = signed(s, [s.key]);
      return [d, d];
    },
  ),
  refuse('R-wrong-signature', 'a delivery signed with another key only', [`${SW}: Verifying signatures`, 'D-80'], (s) => [
    signed(s, [s.otherKey]),
  ]),
  refuse(
    'R-body-changed',
    'a delivery whose body changed after signing (one space added: the same JSON, other bytes)',
    [`${SW}: Signature scheme (the raw body, never JSON serialized again)`, 'D-80'],
    (s) => {
      const d = signed(s, [s.key]);
      return [{ ...d, body: d.body.replace('{', '{ ') }];
    },
  ),
  refuse(
    'R-timestamp-old',
    `a delivery signed with a timestamp ${SKEW_S / 60} minutes old`,
    [`${SW}: Verifying signatures (timestamp tolerance)`, 'D-80'],
    (s) => [signed(s, [s.key], s.nowS - SKEW_S)],
  ),
  refuse(
    'R-timestamp-ahead',
    `a delivery signed with a timestamp ${SKEW_S / 60} minutes ahead`,
    [`${SW}: Verifying signatures (timestamp tolerance)`, 'D-80'],
    (s) => [signed(s, [s.key], s.nowS + SKEW_S)],
  ),
  ...(['webhook-id', 'webhook-timestamp', 'webhook-signature'] as const).map((header) =>
    refuse(`R-no-${header}`, `a signed delivery without its ${header} header`, [`${SW}: Webhook headers`, 'D-80'], without(header)),
  ),
];

/** A key of 32 random bytes: the one the receiver does not hold. */
export function strangerKey(): Buffer {
  return randomBytes(32);
}
