// Idempotency-Key claims: what a store saves with the work a keyed request ran (docs/reliability.md).

/**
 * An Idempotency-Key's claim on the work it ran (src/pipeline/idempotency.ts): saved in the same step
 * as that work, so that no crash can keep the work without the claim, and a keyed retry never runs
 * the work twice (docs/reliability.md).
 */
export interface IdempotencyClaim {
  /** The client's key, hashed with its app (keys are per app). */
  key: string;
  /** What "the same request" means: a hash of method, path and canonical body. */
  fingerprint: string;
}

/** A claim as kept, with the time (ms) its work was saved. */
export interface KeptClaim extends IdempotencyClaim {
  at: number;
}

/** How long an Idempotency-Key is honoured, and its claim kept (the draft asks that it be published: docs/reliability.md). */
export const CLAIM_TTL_MS = 24 * 3_600_000;
