// Messages of the cluster rate limits on the cluster RPC (op "counters"): beats that carry the
// async-limit counts, batches of checks forwarded to a limit's owner, reservations an owner asks
// of its successor, and hand-backs. Plain data (msgpack on the authenticated cluster channel).
import type { AppliedLimit, AsyncCounts, RatelimitRequest, VerifyResult } from "@keyraft/core";
import type { V1ErrorCode } from "../../errors.js";

/** The fields of a verifyKey body the owner needs; the key itself never leaves the node (only its hash). */
export interface VerifyFields {
  apiId?: string;
  tags?: string[];
  authorization?: { permissions?: unknown };
  remaining?: { cost?: number };
  ratelimit?: { cost?: number };
  ratelimits?: RatelimitRequest[];
}

/** A check forwarded to the node serving its subject. */
export type ForwardItem =
  /** `appliedIndex`: the Raft index the forwarding node had applied; judged once the owner applied it too. */
  | { k: "verify"; subject: string; hash: string; requestId: string; fields: VerifyFields; appliedIndex?: number }
  | {
      k: "limit";
      subject: string;
      key: string;
      limit: number;
      durationMs: number;
      cost: number;
      /** The counter's bound group (its namespace), bounded by limiterCountersPerNamespaceMax. */
      group?: string;
    };

export type ForwardResult =
  | { k: "verify"; result: VerifyResult; triggered: string | null; limits?: AppliedLimit[]; balance?: number }
  | { k: "limit"; success: boolean; limit: number; remaining: number; reset: number }
  /** Not judged (not the serving node, or it could not cover the admission): answered as this error. */
  | { k: "error"; status: number; code: V1ErrorCode; message: string };

/** A reservation bucket on the wire: `key` is the reservation key (duration and limiter key, see subject.ts). */
export interface WireAsk {
  key: string;
  limit: number;
  bucketStartMs: number;
  count: number;
  generation: number;
}

/** A bucket's count on the wire, without a generation (hand-backs, collected counts). */
export type WireBucket = Omit<WireAsk, "generation">;

export type CounterRequest =
  /**
   * Every reconcile period to every peer: liveness and this node's async-limit counts, with its
   * clock when it sent them and the time of its oldest unconfirmed async admission (the traffic
   * weights of the async shares need both; a beat without them gives the floor share only).
   */
  | { t: "beat"; asyncCounts: AsyncCounts[]; asyncNowMs?: number; asyncUnconfirmedSinceMs?: number }
  | { t: "batch"; items: ForwardItem[] }
  /**
   * Owner to successor; `boot` is the successor's boot id the generation came from. `covered`: the
   * generation in which the owner has covered every count it held after the hand-back (asks may
   * then be empty): the successor may take over from what it reserved.
   */
  | { t: "reserve"; boot: string; asks: WireAsk[]; covered?: number }
  /** Owner to successor: stop serving my subjects and give me their counts. */
  | { t: "handBack"; voters?: string[] }
  /**
   * Owner to every other node it knows (with a hand-back): the counts you hold of subjects that
   * rank me first over `voters` (a node they passed through in quick membership changes).
   */
  | { t: "collect"; voters: string[] }
  /**
   * A successor serving its owner's subjects (after a takeover) to the node ranked next: keep
   * these counts durably (they are admissions only the sender holds otherwise) and give them to
   * whoever collects or is handed back those subjects later.
   */
  | { t: "copy"; buckets: WireBucket[]; voters: string[] };

export type CounterReply =
  | { t: "beat" }
  | { t: "batch"; results: ForwardResult[] }
  /** One per ask, same order: the acknowledgement, or null when refused (fenced, other generation or boot). */
  | { t: "reserve"; acks: (WireAsk | null)[] }
  /** `nodes`: every node the successor knows (the owner asks them for counts too). */
  | { t: "handBack"; boot: string; generation: number; buckets: WireBucket[]; nodes?: string[] }
  /**
   * The counts asked for, and every node the answering one knows (asked next); `sameVoters`: it
   * has applied the asker's voters (so it no longer serves or takes over with an older pairing).
   */
  | { t: "collect"; buckets: WireBucket[]; nodes: string[]; sameVoters?: boolean }
  /** The copies are durable: `counts` is what is kept for each bucket asked, in order. */
  | { t: "copy"; counts: number[] }
  /** The receiver cannot take the request (e.g. not started yet). */
  | { t: "refused"; message: string };

/** What the rate limits need of the cluster: membership, a call to a peer, and serving peers' calls. */
export interface CounterTransport {
  readonly nodeId: string;
  /** The Raft voters at this node's applied configuration. */
  voters(): readonly string[];
  /** The Raft index this node has applied (absent: no replicated log, nothing to wait for). */
  appliedIndex?(): number;
  /** Resolves once this node has applied `index`, or after `timeoutMs`, whichever is first. */
  waitApplied?(index: number, timeoutMs: number): Promise<void>;
  /** "notSent" when no connection to `peer` is open (nothing was sent); rejects when unanswered. */
  call(peer: string, request: CounterRequest): Promise<CounterReply | "notSent">;
  serve(handler: (from: string, request: CounterRequest) => Promise<CounterReply>): void;
}

/** The fields of a verifyKey body to forward: everything but the key (the owner gets its hash). */
export function verifyFieldsOf(body: VerifyFields): VerifyFields {
  const fields: VerifyFields = {};
  if (body.apiId !== undefined) fields.apiId = body.apiId;
  if (body.tags !== undefined) fields.tags = body.tags;
  if (body.authorization !== undefined) fields.authorization = body.authorization;
  if (body.remaining !== undefined) fields.remaining = body.remaining;
  if (body.ratelimit !== undefined) fields.ratelimit = body.ratelimit;
  if (body.ratelimits !== undefined) fields.ratelimits = body.ratelimits;
  return fields;
}
