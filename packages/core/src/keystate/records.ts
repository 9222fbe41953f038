// The record of a key and the values it holds: what the key table (key-table.ts) stores as bytes.
// Apart from types.ts, which holds the whole state, so the table needs nothing of the state.

export type JsonObject = { [key: string]: unknown };

/** A named rate limit configured on a key or an identity. */
export interface RatelimitConfig {
  name: string;
  /** Requests admitted per window; >= 1 (0 is allowed on identities: admits nothing). */
  limit: number;
  durationMs: number;
  /** Applied to every verification without being named in the request. */
  autoApply: boolean;
}

/** Refill rule: at 00:00 UTC of a due day, `remaining` becomes `amount` when `amount` is larger. */
export interface RefillRule {
  interval: "daily" | "monthly";
  amount: number;
  /** Day of month 1..31 for monthly (31 = the month's last day); null for daily. */
  refillDay: number | null;
  /** Unix ms of the last applied refill (or of the rule's creation); refills due after it apply lazily. */
  lastRefillAtMs: number;
}

export interface KeyRecord {
  id: string;
  apiId: string;
  /** base64(SHA-256(utf8(secret))): the plaintext is never stored. */
  hash: string;
  start: string;
  name: string | null;
  /** Deprecated alias of the identity's externalId, kept as given. */
  ownerId: string | null;
  identityId: string | null;
  meta: JsonObject | null;
  createdAtMs: number;
  updatedAtMs: number | null;
  expiresAtMs: number | null;
  enabled: boolean;
  environment: string | null;
  /**
   * Credits left; null = unlimited. Never below 0 through spends (decision 2). With finite credits
   * this is the replicated view of the key's credit ledger (`ledgerRemaining`: unleased credits
   * plus the current epoch's unsettled lease grants), kept equal to it by every command.
   */
  remaining: number | null;
  refill: RefillRule | null;
  /** Key-level limits; `default` is the one createKey/updateKey manage. Sorted by name. */
  ratelimits: RatelimitConfig[];
  /** Sorted ids of directly connected roles and permissions. */
  roleIds: string[];
  permissionIds: string[];
  /**
   * The migration (KEYRAFT_KEY_MIGRATIONS) this key awaits its first verification for: its `hash`
   * is then the migration's form of the secret and `start` is "". Absent = a standard key.
   */
  pendingMigrationId?: string;
}
