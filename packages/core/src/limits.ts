// Named maxima of the core's leaf modules. Every map, buffer and input size has one; each is
// checked at its boundary and tested at the limit and one past it.

/** Deepest nesting of `and`/`or` a permission query may have (a bare string is depth 1). */
export const permissionQueryDepthMax = 32;

/**
 * Most nodes (strings plus `and`/`or` objects) a permission query parse may examine, counting
 * nodes of a union branch that was tried and abandoned: bounds parse work, not only size.
 */
export const permissionQueryNodesMax = 1000;

/** Default bound on the rate limiter's entries (distinct counter keys held in memory). */
export const limiterEntriesMax = 1_000_000;

/**
 * Most counters a caller may create for one key through inline limits of verifyKey. Past it the
 * key's least recently used inline counter is evicted: its counts are lost, which only ever
 * favours that key (its own counter), and the table never fills for other tenants. At least
 * limiterChecksPerCallMax (one call's checks).
 */
export const limiterCountersPerOwnerMax = 256;

/**
 * Most counters one ratelimits.limit namespace holds (one per identifier and window); past it the
 * namespace's least recently used counter is evicted. Bounds one tenant's share of the table.
 */
export const limiterCountersPerNamespaceMax = 100_000;

/** Default number of sub-buckets per window of the sliding-window limiter. */
export const limiterBucketsPerWindowDefault = 10;

/** Upper bound on bucketsPerWindow: each entry holds bucketsPerWindow + 1 counters. */
export const limiterBucketsPerWindowMax = 1000;

/** Most checks one `limit` call may judge together (several limits on one request). */
export const limiterChecksPerCallMax = 128;

/** Entries the limiter's amortized sweep examines per new entry it inserts. */
export const limiterSweepStepMax = 4;

/** Entries examined by the sweep when the table is full before a new key is refused. */
export const limiterSweepFullMax = 64;

/** Random bytes in a key secret (`byteLength` of createKey): the API allows 16..255. */
export const keySecretBytesMin = 16;
export const keySecretBytesMax = 255;

/** Random bytes in an id (after the 4-byte timestamp). */
export const idRandomBytes = 8;
/** Longest v2 permission query string ("a AND (b OR c)"), upstream's bound. */
export const permissionQueryTextLengthMax = 1000;
