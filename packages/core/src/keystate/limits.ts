// Named maxima of the key state. Every map and per-record list is bounded; a command that would
// exceed a bound is refused with PRECONDITION_FAILED and changes nothing.

export const apisMax = 100_000;
export const keysMax = 10_000_000;
export const identitiesMax = 1_000_000;
export const permissionsMax = 100_000;
export const rolesMax = 100_000;
export const namespacesMax = 100_000;
export const overridesMax = 1_000_000;
/** Roles or permissions directly connected to one key, or carried by one role. */
export const connectionsPerRecordMax = 1_000;
/** Named rate limits on one key or one identity (upstream v2's bound). */
export const ratelimitsPerRecordMax = 50;
/** JSON text of a `meta` object (upstream's 64k rule for identities, applied everywhere). */
export const metaJsonLengthMax = 64_000;
/** Largest credit balance a key may hold, so every ledger sum stays an exact (safe) integer. */
export const creditsMax = 2 ** 50;
/** Keys one migrations.createKeys call (one command) may import. */
export const importKeysMax = 1_000;
/** Lease commands in one creditBatch command (one log entry). */
export const creditBatchCommandsMax = 512;
/** Keys one refillCredits command refills. */
export const refillKeysPerCommandMax = 1_000;
/** Hashes of deleted root keys remembered (KeyState.retiredRootKeyHashes); the oldest is forgotten past it. */
export const retiredRootKeysMax = 10_000;
/** Distinct lists of key limits held once and shared by the keys that have them (key-codec.ts LimitsTable). */
export const interningTableMax = 10_000;
/** Keys whose verification view (derived.ts) is cached; the oldest is dropped past it. */
export const derivedCacheMax = 100_000;
