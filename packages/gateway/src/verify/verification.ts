// The verification of a key, in one place: decide (@keyraft/core decideVerification) → cover the
// rate-limit counts it admitted (on disk, and in a cluster at the limit owner's successor,
// counters/ratelimit) → spend the credits (this node's lease, counters/credits, else a log entry)
// → record analytics → the answer. Every caller only translates its request and the answer:
//   - POST /v1/keys.verifyKey and /v1/keys/verify (routes/verify-key.ts);
//   - a verification another node forwarded here (counters/ratelimit/cluster-limits.ts calls
//     `verifyHere` through the LocalVerifier that app.ts installs);
//   - the verify route of any other API version, with its request translated to VerifyFields.
//
//   verification.verify(hash, requestId, fields): VerifyOutcome | Promise<VerifyOutcome>
//     hash       hashKey(plaintext) (auth/hash.ts): the key itself never reaches the decision
//     requestId  the request's id; it is the result's `requestId`
//     fields     the v1 verifyKey body without `key` (VerifyFields, counters/ratelimit/wire.ts);
//                extra fields (such as `key`) are ignored and never forwarded
//   The outcome: `result`, the v1 verification body (VerifyResult in @keyraft/core), and
//   `triggeredRatelimit`, the name of the rate limit that refused it (the v1 route's
//   Unkey-Ratelimit-Triggered header), if any, and `limits`, every rate limit checked with its
//   outcome (the v2 route lists them; a forwarded answer carries them back). A plain value when nothing had to be waited for
//   (every count already covered on disk, and no credit spent or the spend already covered by its
//   lease's journal): the hot path has no await and allocates nothing here (the outcome is the
//   decision itself). Throws (or rejects with) a V1Error: BAD_REQUEST for an
//   invalid permission query or rate-limit request, 503 while a cluster cannot judge the key's
//   rate limits, and the store's errors.
//
//   `verify` judges where the cluster serves the key's limits (maybe another node); `verifyHere`
//   always judges on this node (what a forwarded verification asks for).

import {
  creditLedgerOf,
  decideVerification,
  keyCreditsAt,
  type AppliedLimit,
  type CommandOutcome,
  type KeyCommand,
  type KeyState,
  type SlidingWindowLimiter,
  type VerifyDecision,
  type VerifyResult,
} from "@keyraft/core";
import type { VerificationRecorder } from "../analytics/recorder.js";
import type { CreditSpender, LeaseSpend } from "../counters/credits/lease-spender.js";
import type { ClusterRateLimits, VerifiedAnswer } from "../counters/ratelimit/cluster-limits.js";
import { bothCovered } from "../counters/ratelimit/judge-here.js";
import type { VerifyFields } from "../counters/ratelimit/wire.js";
import { badRequest } from "../errors.js";
import type { CommandLog, CounterDurability } from "../store/types.js";

export type { VerifyFields } from "../counters/ratelimit/wire.js";

/** The answer of a verification (a VerifyDecision is one, so the local path allocates nothing). */
export interface VerifyOutcome {
  result: VerifyResult;
  triggeredRatelimit?: string | undefined;
  /** Every rate limit the verification checked, with its outcome (v2 answers each). */
  limits?: readonly AppliedLimit[] | undefined;
  /**
   * The key's balance as the judging node shows it, when the answer carries none (`result.remaining`
   * is set only when credits were reached, as v1 answers): v2 answers it with every code.
   */
  balance?: number | undefined;
}

export interface VerificationDeps {
  state: KeyState;
  limiter: SlidingWindowLimiter;
  commandLog: CommandLog<KeyCommand, CommandOutcome>;
  counterDurability: CounterDurability;
  analytics: VerificationRecorder;
  /** Counts each decided verification by api and code (GET /metrics); absent = not counted. */
  metrics?: { verified(apiId: string, code: VerifyResult["code"]): void } | undefined;
  nowMs(): number;
  /** Credit leases of this node; absent = every credit spend is a log entry. */
  creditLeases?: CreditSpender | undefined;
  /** Rate limits across the cluster; absent = judged here only. */
  rateLimits?: ClusterRateLimits | undefined;
}

export class Verification {
  /** This node's own unsettled lease spends of a key (made once: the hot path allocates nothing). */
  private readonly creditsSpentHere: ((keyId: string) => number) | undefined;

  constructor(private readonly deps: VerificationDeps) {
    const leases = deps.creditLeases;
    this.creditsSpentHere = leases === undefined ? undefined : (keyId) => leases.shown.spentHere(keyId);
  }

  /** Verifies where the cluster judges the key's rate limits: here, or at the node serving them. */
  verify(hash: string, requestId: string, fields: VerifyFields): VerifyOutcome | Promise<VerifyOutcome> {
    const elsewhere = this.deps.rateLimits?.verifyElsewhere(hash, fields, requestId) ?? null;
    if (elsewhere === null) return this.verifyHere(hash, requestId, fields);
    return elsewhere.then(outcomeOfAnswer);
  }

  /** Verifies on this node, now. */
  verifyHere(hash: string, requestId: string, fields: VerifyFields): VerifyOutcome | Promise<VerifyOutcome> {
    const { deps } = this;
    const nowMs = deps.nowMs();
    const decision = decideVerification(
      deps.state,
      deps.limiter,
      {
        requestId,
        hash,
        apiId: fields.apiId,
        permissions: fields.authorization?.permissions,
        creditCost: fields.remaining?.cost ?? 1,
        defaultLimitCost: fields.ratelimit?.cost,
        ratelimits: fields.ratelimits,
        creditsSpentHere: this.creditsSpentHere,
      },
      nowMs,
    );
    if (decision.kind === "badRequest") throw badRequest(decision.message);
    if (decision.evicted.length > 0) this.deps.counterDurability.forget?.(decision.evicted);
    // A balance shown without a spend (a read, a refusal) is this node's view now; a spend's
    // answer is taken where the spend happens (finish).
    const key = decision.key;
    if (
      decision.creditSpend === undefined &&
      decision.result.remaining !== undefined &&
      key !== undefined &&
      deps.creditLeases !== undefined
    )
      decision.result.remaining = deps.creditLeases.shown.displayed(key, decision.result.remaining, nowMs);
    const cover = decision.touched.length === 0 ? null : this.coverTouched(decision);
    if (decision.creditSpend === undefined && cover === null) {
      this.record(decision, nowMs, fields.tags);
      // A refusal before credits of a key with a balance: that balance, taken here where the key's
      // verifications spend (the node a v2 answer was forwarded from may not have seen them yet).
      if (decision.result.remaining === undefined && key !== undefined && key.remaining !== null) {
        const balance =
          deps.creditLeases === undefined ? keyCreditsAt(key, nowMs) : deps.creditLeases.shown.at(key, nowMs);
        if (balance !== null)
          return {
            result: decision.result,
            triggeredRatelimit: decision.triggeredRatelimit,
            limits: decision.limits,
            balance,
          };
      }
      return decision;
    }
    if (cover === null && deps.creditLeases !== undefined) {
      // A spend its lease's journal already covers is answered now, without a promise.
      const spend = decision.creditSpend!;
      const leased = deps.creditLeases.spendNow(spend.keyId, spend.cost);
      if (!(leased instanceof Promise)) {
        this.applyLeased(decision, leased);
        this.record(decision, nowMs, fields.tags);
        return decision;
      }
      return this.finishSpend(decision, leased, nowMs, fields.tags);
    }
    return this.finish(decision, cover, nowMs, fields.tags);
  }

  /** The answer to a verification another node forwarded here (the wire's shape). */
  verifyForwarded(hash: string, requestId: string, fields: VerifyFields): Promise<VerifiedAnswer> {
    const outcome = this.verifyHere(hash, requestId, fields);
    return outcome instanceof Promise ? outcome.then(answerOfOutcome) : Promise.resolve(answerOfOutcome(outcome));
  }

  /** The rate-limit counts a decision admitted: on disk, and in a cluster at the owner's successor (counters/ratelimit). */
  private coverTouched(decision: VerifyDecision): Promise<void> | null {
    const disk = this.deps.counterDurability.cover(decision.touched);
    const owner = decision.derived?.limitOwnerId;
    return bothCovered(
      disk,
      owner === undefined ? null : (this.deps.rateLimits?.coverVerification(owner, decision.touched) ?? null),
    );
  }

  /** Waits for the counter coverage, then the credit spend (its outcome is authoritative). */
  private async finish(
    decision: VerifyDecision,
    cover: Promise<void> | null,
    nowMs: number,
    tags: readonly string[] | undefined,
  ): Promise<VerifyDecision> {
    const { deps } = this;
    // Coverage first: a verification whose rate-limit count cannot be covered (a 503 in a cluster
    // takeover, counters/ratelimit) must not have spent a credit.
    if (cover !== null) await cover;
    const spend = decision.creditSpend;
    if (spend === undefined) {
      this.record(decision, nowMs, tags);
      return decision;
    }
    // From this node's credit lease when it has one (counters/credits), else decided on the log.
    const leased = deps.creditLeases === undefined ? null : deps.creditLeases.spendNow(spend.keyId, spend.cost);
    return this.finishSpend(decision, leased, nowMs, tags);
  }

  /** The spend's lease outcome (null: none; decide it on the log), then the record and the answer. */
  private async finishSpend(
    decision: VerifyDecision,
    pending: LeaseSpend | null | Promise<LeaseSpend | null>,
    nowMs: number,
    tags: readonly string[] | undefined,
  ): Promise<VerifyDecision> {
    const { deps } = this;
    const { result } = decision;
    const spend = decision.creditSpend!;
    const leased = await pending;
    if (leased !== null) this.applyLeased(decision, leased);
    else {
      const outcome = await deps.commandLog.append(spend);
      // Under replication a concurrent spend may have been ordered first: then this one was
      // refused at apply time and nothing was deducted.
      if (!outcome.ok) {
        result.valid = false;
        result.code = "USAGE_EXCEEDED";
        // The balance as this node shows it (without leases: what the log could still draw from).
        const shown = deps.creditLeases?.shown.now(spend.keyId);
        const ledger = creditLedgerOf(deps.state, spend.keyId);
        if (shown !== undefined && shown !== null) result.remaining = shown;
        else if (ledger !== undefined) result.remaining = ledger.unleased;
      } else if (typeof outcome.remaining === "number") {
        // Taken at the apply (credit-events.ts): this node's view right after this spend.
        result.remaining = outcome.remaining;
      }
    }
    this.record(decision, nowMs, tags);
    return decision;
  }

  /** A spend from this node's credit lease: its balance, or the owner's refusal (nothing spent). */
  private applyLeased(decision: VerifyDecision, leased: LeaseSpend): void {
    const { result } = decision;
    if (leased.t === "admitted") {
      if (leased.remaining !== null) result.remaining = leased.remaining;
      return;
    }
    // The owner of the key's last credits found too few (docs/counters.md): nothing was spent.
    result.valid = false;
    result.code = "USAGE_EXCEEDED";
    result.remaining = leased.remaining;
  }

  /** Counts the outcome (metrics) and buffers it for analytics (O(1), no await); verifications of unknown keys are not attributable to a key. */
  private record(decision: VerifyDecision, nowMs: number, tags: readonly string[] | undefined): void {
    const key = decision.key;
    this.deps.metrics?.verified(key?.apiId ?? "unknown", decision.result.code);
    if (key === undefined) return;
    // v2 analytics read the identity's externalId and the credits spent (0 unless the spend went through).
    const externalId =
      key.identityId === null ? null : (this.deps.state.identities.get(key.identityId)?.externalId ?? null);
    const spent = decision.result.valid ? (decision.creditSpend?.cost ?? 0) : 0;
    this.deps.analytics.record(nowMs, key.id, key.apiId, key.identityId, decision.result.code, tags, externalId, spent);
  }
}

function outcomeOfAnswer(answer: VerifiedAnswer): VerifyOutcome {
  return {
    result: answer.result,
    triggeredRatelimit: answer.triggered ?? undefined,
    limits: answer.limits,
    balance: answer.balance,
  };
}

function answerOfOutcome(outcome: VerifyOutcome): VerifiedAnswer {
  const answer: VerifiedAnswer = { result: outcome.result, triggered: outcome.triggeredRatelimit ?? null };
  if (outcome.limits !== undefined && outcome.limits.length > 0) answer.limits = outcome.limits;
  if (outcome.balance !== undefined) answer.balance = outcome.balance;
  return answer;
}
