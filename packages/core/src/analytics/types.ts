// Verification analytics: the records the aggregator keeps and the queries it answers. Plain
// data, so a node's series can be persisted, shipped to another node and merged.

import type { VerifyCode } from "../verify/types.js";

/** Counts per verification outcome (the v1 analytics field names). */
export interface OutcomeCounts {
  valid: number;
  notFound: number;
  forbidden: number;
  usageExceeded: number;
  rateLimited: number;
  unauthorized: number;
  disabled: number;
  insufficientPermissions: number;
  expired: number;
}

export type OutcomeField = keyof OutcomeCounts;

/** One verification, as the verify route reports it. */
export interface VerificationEvent {
  timeMs: number;
  keyId: string;
  apiId: string;
  identityId: string | null;
  /** The identity's externalId at the time (v2 analytics `external_id`); absent = none. */
  externalId?: string | null;
  outcome: VerifyCode;
  tags: readonly string[];
  /** Credits this verification spent (0 unless VALID with a cost); absent = 0. */
  spentCredits?: number;
}

/**
 * One series: the counts of one hour x key x tag set. `keyId` is `overflowKeyId` for the
 * series that collect verifications once the aggregator holds its maximum of series.
 */
export interface VerificationSeries {
  /** Start of the UTC hour (unix ms). */
  hourMs: number;
  keyId: string;
  apiId: string;
  identityId: string | null;
  /** externalId of the identity when the series began (absent in series recorded before v2 analytics). */
  externalId?: string | null;
  /** Sorted, without duplicates. */
  tags: string[];
  counts: OutcomeCounts;
  /** Credits spent by the series' verifications (absent in series recorded before v2 analytics = 0). */
  spentCredits?: number;
}

export type AnalyticsGroupBy = "key" | "identity" | "tags" | "tag" | "month" | "day" | "hour";
export type AnalyticsOrderBy = "time" | OutcomeField | "total";

/** What to count: series of one api whose hour overlaps [startMs, endMs] (both inclusive), optionally narrowed. */
export interface VerificationFilter {
  /** One api (v1 queries); absent = no narrowing by this field. */
  apiId?: string | undefined;
  /** Any of these apis (v2 analytics scope); absent = every api. */
  apiIds?: readonly string[] | undefined;
  startMs: number;
  endMs: number;
  /** Any of these keys (absent = every key). */
  keyIds?: readonly string[] | undefined;
  /** Keys of this identity. */
  identityId?: string | undefined;
  /** Series carrying any of these tags. */
  tags?: readonly string[] | undefined;
}

export interface VerificationQuery extends VerificationFilter {
  groupBy: readonly AnalyticsGroupBy[];
  orderBy?: AnalyticsOrderBy | undefined;
  order?: "asc" | "desc" | undefined;
  limit?: number | undefined;
}

/** One answer row: the counts of one group (fields present per grouping). */
export interface VerificationRow extends OutcomeCounts {
  total: number;
  time?: number;
  keyId?: string;
  identityId?: string | null;
  tag?: string;
  tags?: string[];
}
