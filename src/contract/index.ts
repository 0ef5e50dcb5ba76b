// The one contract: zod schemas of every resource, request, event and error of interface 1.0.0
// (docs/interface.md) plus the project's decisions D-1…D-24 (docs/decisions.md), shared by the server,
// the CLI and the conformance suite. One file per layer; this barrel is what importers use.
//
// - limits.ts: the numbers of §8 and the decisions, and how characters, bytes and depth are counted;
// - resources.ts: §2 as the interface states it (`spec`) and as the server sends it (`Reference…`);
// - requests.ts: §4's request bodies and query, with the rules the server enforces;
// - events.ts: §6's event payloads, `spec` and reference (D-16);
// - errors.ts: §7's error object and statuses;
// - lenient.ts: the reading layer of a client that must work with any implementation;
// - openapi.ts (not re-exported here): the published OpenAPI document built from all of the above.
export * from './limits.ts';
export * from './resources.ts';
export * from './requests.ts';
export * from './events.ts';
export * from './errors.ts';
export * from './lenient.ts';
export * from './resumable.ts';
