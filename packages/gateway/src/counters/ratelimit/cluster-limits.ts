// Rate limits across the cluster (docs/counters.md §2): where each check is judged, and the
// cluster side of it. `async: false` limits are exact: each subject (subject.ts) is judged by its
// owner (rendezvous hashing over the voters), which covers every admission with a reservation at
// its successor (owner-side.ts, successor-side.ts); other nodes forward the check in batches
// (forwarder.ts) and answer the owner's result. When the owner is down (liveness.ts) its
// successor takes over, and hands back when the owner returns. `async: true` limits answer here
// and reconcile through the beats (core's placement/async-limits.ts). A one-member cluster judges everything
// here, as a single node always did: no forwarding, no reservations, no beats.
import { randomBytes } from "node:crypto";
import {
  AsyncLimits,
  limiterCountersPerNamespaceMax,
  type AppliedLimit,
  rankNodes,
  type KeyState,
  type LimitCheck,
  type SlidingWindowLimiter,
  type BucketCount,
  type VerifyResult,
} from "@keyraft/core";
import type { Logger } from "pino";
import { V1Error, type V1ErrorCode } from "../../errors.js";
import type { CounterDurability } from "../../store/types.js";
import type { RateLimitClusterConfig } from "./config.js";
import { CopySide } from "./copy-side.js";
import { limitUnavailable } from "./errors.js";
import { errorOfResult, Forwarder } from "./forwarder.js";
import { judgeLimitHere, type LimitAnswer } from "./judge-here.js";
import { PeerLiveness } from "./liveness.js";
import { OwnerSide } from "./owner-side.js";
import { subjectOfLimiterKey, subjectOfVerification, verifySubject } from "./subject.js";
import { SuccessorSide, successorOwnersMax } from "./successor-side.js";
import {
  verifyFieldsOf,
  type CounterReply,
  type CounterRequest,
  type CounterTransport,
  type ForwardItem,
  type ForwardResult,
  type VerifyFields,
} from "./wire.js";

/** Voters needed for a successor to take over: itself, and a node to keep a copy of its admissions. */
export const takeoverVotersMin = 3;
/** Subjects whose ranking is cached (cleared when full or when the voters change). */
export const rankCacheMax = 100_000;
/** How long reservations of the owner side are kept (longer windows just ask again). */
const ownerCoveragePruneAfterMs = 10 * 60_000;
const pruneEveryMs = 1000;

export type Placement =
  /** Judge here; `successor`: the node that must cover the admission (null: none, alone or serving after a takeover). */
  | { kind: "here"; successor: string | null }
  | { kind: "wait"; ready: Promise<void> }
  | { kind: "forward"; target: string }
  | { kind: "unavailable"; message: string };

export interface VerifiedAnswer {
  result: VerifyResult;
  triggered: string | null;
  /** Every limit the verification checked (v2 answers each); absent from older nodes' answers. */
  limits?: readonly AppliedLimit[];
  /** The key's balance at the judging node when `result` carries none (a refusal before credits). */
  balance?: number;
}

/** The verify route's local path, for verifications forwarded to this node. */
export type LocalVerifier = (hash: string, requestId: string, fields: VerifyFields) => Promise<VerifiedAnswer>;

export interface ClusterRateLimitsOptions {
  transport: CounterTransport;
  state: KeyState;
  limiter: SlidingWindowLimiter;
  durability: CounterDurability;
  config: RateLimitClusterConfig;
  nowMs(): number;
  logger: Logger;
}

const hereAlone: Placement = Object.freeze({ kind: "here", successor: null });

export class ClusterRateLimits {
  readonly liveness: PeerLiveness;
  readonly owner: OwnerSide;
  readonly successor: SuccessorSide;
  readonly copies: CopySide;
  readonly asyncLimits: AsyncLimits;
  private readonly forwarder: Forwarder;
  private readonly nodeId: string;
  private localVerifier: LocalVerifier | null = null;
  private beatTimer: NodeJS.Timeout | null = null;
  private readonly beatsInFlight = new Set<string>();
  /** Copies in flight of the counts restored at a takeover, per owner taken over (copyRestored). */
  private readonly restoredCopies = new Map<string, Promise<void>>();
  private lastPruneMs = 0;
  /** Checks sent to the node serving their subject, and checks no node could serve (a 503); read by GET /metrics. */
  readonly placements = { forwarded: 0, unavailable: 0 };
  /**
   * The voters as of the last beat (every R ms): the verify path reads a field instead of
   * building the Raft status per request. A membership change is seen within R.
   */
  private voters: readonly string[];
  private votersKey: string;
  private readonly ranks = new Map<string, readonly string[]>();
  /** Every node seen among the voters (at most successorOwnersMax): a new owner collects counts from them all. */
  private readonly knownNodes = new Set<string>();

  constructor(private readonly options: ClusterRateLimitsOptions) {
    const { transport, limiter, durability, config, nowMs, logger } = options;
    this.nodeId = transport.nodeId;
    this.liveness = new PeerLiveness(config.suspectAfterMs);
    this.owner = new OwnerSide({
      transport,
      limiter,
      liveness: this.liveness,
      timeoutMs: config.timeoutMs,
      knownNodes: () => [...this.knownNodes],
      covers: (successor, limiterKey) => {
        const subject = subjectOfLimiterKey(limiterKey);
        if (subject === null) return false;
        const ranked = this.rank(subject);
        return ranked[0] === this.nodeId && ranked[1] === successor;
      },
      nowMs,
      logger,
    });
    this.successor = new SuccessorSide({
      nodeId: this.nodeId,
      boot: randomBytes(8).toString("hex"),
      limiter,
      durability,
      voters: () => transport.voters(),
      knownNodes: () => [...this.knownNodes],
      nowMs,
      logger,
    });
    this.copies = new CopySide({ transport, liveness: this.liveness, timeoutMs: config.timeoutMs, nowMs });
    this.asyncLimits = new AsyncLimits(limiter, config.reconcileMs);
    this.forwarder = new Forwarder({
      transport,
      liveness: this.liveness,
      timeoutMs: config.timeoutMs,
      delayMs: config.forwardDelayMs,
      nowMs,
    });
    transport.serve((from, request) => this.serve(from, request));
    this.voters = transport.voters();
    this.votersKey = this.voters.join(",");
    this.learnNodes(this.voters);
  }

  private learnNodes(voters: readonly string[]): void {
    for (const node of voters) if (this.knownNodes.size < successorOwnersMax) this.knownNodes.add(node);
  }

  /** Takes the voters this node applied now; true when they changed. */
  private refreshVoters(): boolean {
    const voters = this.options.transport.voters();
    const key = voters.join(",");
    if (key === this.votersKey) return false;
    this.options.logger.info({ voters }, "rate limits: voters changed; subjects are placed over the new set");
    this.voters = voters;
    this.votersKey = key;
    this.learnNodes(voters);
    this.ranks.clear();
    // Subjects of a removed owner move here with their reserved counts (successor-side.ts), and
    // the counts this node now owns are covered at their successors before it decides (owner-side.ts).
    this.successor.votersChanged(voters);
    this.owner.votersChanged();
    this.coverHeldNow();
    return true;
  }

  /**
   * After a voter change, the counts this node holds of subjects it now owns (its own, and those
   * it took over from a removed owner) are covered at their successors at once, not at their next
   * check: until then they are held here alone, and would be lost if this node were removed next.
   */
  private coverHeldNow(): void {
    if (this.voters.length <= 1) return;
    const successors = new Set<string>();
    for (const bucket of this.options.limiter.snapshot(this.options.nowMs())) {
      const subject = subjectOfLimiterKey(bucket.key);
      if (subject === null) continue;
      const ranked = this.rank(subject);
      if (ranked[0] === this.nodeId && ranked[1] !== undefined) successors.add(ranked[1]);
    }
    // A hand-back covers every count held of the successor's subjects (owner-side.ts); a failed one
    // is asked again at the subjects' next check.
    for (const successor of successors) this.owner.ready(successor)?.catch(() => undefined);
  }

  /** Owner first, then its successors (cached per subject). */
  private rank(subject: string): readonly string[] {
    let ranked = this.ranks.get(subject);
    if (ranked === undefined) {
      if (this.ranks.size >= rankCacheMax) this.ranks.clear();
      ranked = rankNodes(subject, this.voters);
      this.ranks.set(subject, ranked);
    }
    return ranked;
  }

  start(): void {
    this.beatTimer = setInterval(() => this.beat(), this.options.config.reconcileMs);
    this.beatTimer.unref();
  }

  stop(): void {
    if (this.beatTimer !== null) clearInterval(this.beatTimer);
    this.beatTimer = null;
    const { forwarder, owner, successor, asyncLimits } = this;
    this.options.logger.info(
      {
        forwardedBatches: forwarder.batchesSent,
        forwardedChecks: forwarder.itemsSent,
        reservationAsks: owner.asksSent,
        handBacksRestored: owner.handBacksRestored,
        takeovers: successor.takeovers,
        handBacks: successor.handBacks,
        copiesSent: this.copies.copiesSent,
        asyncAdmitted: asyncLimits.admitted,
        asyncRefusedUnconfirmed: asyncLimits.refusedUnconfirmed,
        asyncAdmittedBeyondFloor: asyncLimits.admittedBeyondFloor,
      },
      "rate limits: stopped",
    );
  }

  setLocalVerifier(verifier: LocalVerifier): void {
    this.localVerifier = verifier;
  }

  alone(): boolean {
    return this.voters.length <= 1;
  }

  /** Where a check of `subject` is judged, as this node sees the cluster now. */
  placement(subject: string, nowMs: number): Placement {
    if (this.voters.length <= 1) return hereAlone;
    const ranked = this.rank(subject);
    const owner = ranked[0]!;
    const successor = ranked[1]!;
    if (owner === this.nodeId) {
      const ready = this.owner.ready(successor);
      return ready === null ? { kind: "here", successor } : { kind: "wait", ready };
    }
    const ownerUp = this.liveness.isUp(owner, nowMs);
    if (successor === this.nodeId && !ownerUp) {
      // A takeover is judged over the voters applied now, not those of the last beat: after a
      // change the owner covers its admissions at another node, and this one must not serve them.
      if (this.refreshVoters()) return this.placement(subject, nowMs);
      // With two voters no node could keep a copy of what this one admitted (copy-side.ts): held by
      // it alone, those admissions would be lost with it if it were then removed or replaced.
      if (ranked.length < takeoverVotersMin) {
        this.placements.unavailable++;
        return {
          kind: "unavailable",
          message: `${owner} (its owner) is unreachable, and with ${ranked.length} voters no successor takes over`,
        };
      }
      if (!this.successor.takeOver(owner)) {
        this.placements.unavailable++;
        return { kind: "unavailable", message: `this node holds no counts of ${owner} to take over from` };
      }
      const copying = this.copyRestored(owner, ranked);
      return copying === null ? hereAlone : { kind: "wait", ready: copying };
    }
    if (ownerUp) {
      this.placements.forwarded++;
      return { kind: "forward", target: owner };
    }
    if (this.liveness.isUp(successor, nowMs)) {
      this.placements.forwarded++;
      return { kind: "forward", target: successor };
    }
    this.placements.unavailable++;
    return {
      kind: "unavailable",
      message: `neither ${owner} (its owner) nor ${successor} (its successor) is reachable`,
    };
  }

  /**
   * The counts restored at a takeover of `owner`, copied to the node ranked after this one before
   * this node serves (null: nothing to copy). Until then they would be held here alone if the owner
   * never came back.
   */
  private copyRestored(owner: string, ranked: readonly string[]): Promise<void> | null {
    const inFlight = this.restoredCopies.get(owner);
    if (inFlight !== undefined) return inFlight;
    const buckets = this.successor.uncopiedOf(owner);
    if (buckets.length === 0) return null;
    const copying = this.copies.cover(ranked.slice(2), buckets);
    if (copying === null) {
      this.successor.copied(owner, buckets);
      return null;
    }
    const done = copying
      .then(() => this.successor.copied(owner, buckets))
      .finally(() => this.restoredCopies.delete(owner));
    this.restoredCopies.set(owner, done);
    return done;
  }

  /** The successor coverage of an admission this node just judged for `subject` (null: none needed). */
  coverSubject(subject: string, touched: readonly BucketCount[]): Promise<void> | null {
    if (touched.length === 0 || this.voters.length <= 1) return null;
    const ranked = this.rank(subject);
    if (ranked[0] === this.nodeId) return this.owner.cover(ranked[1]!, touched);
    // Serving as the successor after a takeover: its disk reservation, and a copy at the node
    // ranked next (copy-side.ts), so that no admission is held by one node alone.
    if (ranked[1] === this.nodeId && this.successor.isServing(ranked[0]!))
      return this.copies.cover(ranked.slice(2), touched);
    // Judged here although this node does not serve the subject (the key's identity changed between
    // placement and decision on another replica): never answered.
    return Promise.reject(limitUnavailable("this node does not serve the limit it judged"));
  }

  /** The verification's limits' coverage: `limitOwnerId` is the key's identity id or key id (KeyDerived.limitOwnerId). */
  coverVerification(limitOwnerId: string, touched: readonly BucketCount[]): Promise<void> | null {
    if (touched.length === 0) return null;
    return this.coverSubject(verifySubject(limitOwnerId), touched);
  }

  /**
   * null: judge the verification here, now (alone, no limit applies, or this node serves its
   * subject and is ready). Otherwise the answer of the node that serves it, or of this node
   * after a hand-back; rejects with a V1Error (503 while the subject cannot be judged).
   */
  verifyElsewhere(hash: string, fields: VerifyFields, requestId: string): Promise<VerifiedAnswer> | null {
    if (this.alone()) return null;
    const subject = subjectOfVerification(this.options.state, hash, (fields.ratelimits?.length ?? 0) > 0);
    if (subject === null) return null;
    const placement = this.placement(subject, this.options.nowMs());
    switch (placement.kind) {
      case "here":
        return null;
      case "wait":
        return placement.ready.then(() => this.verifyHere(hash, requestId, fields));
      case "forward":
        return this.forwarder
          .forward(placement.target, this.verifyItem(subject, hash, requestId, fields))
          .then(verifyAnswerOf);
      case "unavailable":
        return Promise.reject(limitUnavailable(placement.message));
      default: {
        const unknown: never = placement;
        throw new Error(`unknown placement ${String(unknown)}`);
      }
    }
  }

  /** A verification to forward, carrying the index this node applied (read-your-writes at the judging node). */
  private verifyItem(subject: string, hash: string, requestId: string, fields: VerifyFields): ForwardItem {
    const item: ForwardItem = { k: "verify", subject, hash, requestId, fields: verifyFieldsOf(fields) };
    const appliedIndex = this.options.transport.appliedIndex?.();
    if (appliedIndex !== undefined) item.appliedIndex = appliedIndex;
    return item;
  }

  private verifyHere(hash: string, requestId: string, fields: VerifyFields): Promise<VerifiedAnswer> {
    if (this.localVerifier === null) return Promise.reject(limitUnavailable("verification is not served here yet"));
    return this.localVerifier(hash, requestId, fields);
  }

  /** ratelimits.limit: judged where its subject is served (`async: true`: here, reconciled in the background). */
  async limit(subject: string, check: LimitCheck, isAsync: boolean): Promise<LimitAnswer> {
    const { limiter, durability, nowMs } = this.options;
    if (this.alone()) return judgeLimitHere(limiter, durability, check, nowMs(), () => null);
    if (isAsync)
      return this.asyncLimits.admit(check.key, check.limit, check.durationMs, check.cost, nowMs(), this.voters.length);
    const placement = this.placement(subject, nowMs());
    switch (placement.kind) {
      case "here":
        return judgeLimitHere(limiter, durability, check, nowMs(), (touched) => this.coverSubject(subject, touched));
      case "wait":
        await placement.ready;
        return judgeLimitHere(limiter, durability, check, nowMs(), (touched) => this.coverSubject(subject, touched));
      case "forward": {
        const item: ForwardItem = {
          k: "limit",
          subject,
          key: check.key,
          limit: check.limit,
          durationMs: check.durationMs,
          cost: check.cost,
        };
        if (check.group !== undefined) item.group = check.group;
        const result = await this.forwarder.forward(placement.target, item);
        if (result.k === "limit")
          return { success: result.success, limit: result.limit, remaining: result.remaining, reset: result.reset };
        throw result.k === "error" ? errorOfResult(result) : limitUnavailable("unexpected answer to a forwarded limit");
      }
      case "unavailable":
        throw limitUnavailable(placement.message);
      default: {
        const unknown: never = placement;
        throw new Error(`unknown placement ${String(unknown)}`);
      }
    }
  }

  private async serve(from: string, request: CounterRequest): Promise<CounterReply> {
    const nowMs = this.options.nowMs();
    this.liveness.heard(from, nowMs);
    // A hand-back or a reservation is judged over the voters applied now (successor-side.ts): this
    // node's own placement takes the same set first, so it stops judging a subject it hands over.
    // A node collecting counts or asking for a copy learns whether this one applied its voters:
    // once it answers that it has, it must no longer serve or take over with an older pairing.
    if (request.t === "handBack" || request.t === "reserve" || request.t === "collect" || request.t === "copy")
      this.refreshVoters();
    switch (request.t) {
      case "beat":
        this.asyncLimits.merge(
          from,
          request.asyncCounts,
          request.asyncNowMs === undefined || request.asyncUnconfirmedSinceMs === undefined
            ? undefined
            : { nowMs: request.asyncNowMs, unconfirmedSinceMs: request.asyncUnconfirmedSinceMs },
        );
        return { t: "beat" };
      case "batch":
        return {
          t: "batch",
          results: await Promise.all(request.items.map((item) => this.judgeForwarded(item).catch(errorResult))),
        };
      case "reserve":
        return this.successor.accept(from, request.boot, request.asks, request.covered);
      case "handBack":
        return this.successor.handBack(from, request.voters);
      case "collect":
        return this.successor.countsFor(from, request.voters);
      case "copy":
        return this.successor.keepCopies(from, request.buckets, request.voters);
      default: {
        const unknown: never = request;
        return { t: "refused", message: `unknown counters request ${String(unknown)}` };
      }
    }
  }

  /** A check another node forwarded: judged only if this node serves its subject (never forwarded again). */
  private async judgeForwarded(item: ForwardItem): Promise<ForwardResult> {
    const placement = this.placement(item.subject, this.options.nowMs());
    if (placement.kind === "forward")
      throw limitUnavailable(`${this.nodeId} does not serve this limit (it sees ${placement.target} serving it)`);
    if (placement.kind === "unavailable") throw limitUnavailable(placement.message);
    if (placement.kind === "wait") await placement.ready;
    if (item.k === "verify") {
      // A key written through the forwarding node (a create, a reroll) must not be NOT_FOUND here:
      // wait until this node applied what that node had, within half the forwarder's timeout so
      // the answer still reaches it; a lagging node then judges with its own (bounded-stale) view.
      const { transport, config } = this.options;
      if (item.appliedIndex !== undefined && transport.waitApplied !== undefined)
        await transport.waitApplied(item.appliedIndex, Math.floor(config.timeoutMs / 2));
      const answer = await this.verifyHere(item.hash, item.requestId, item.fields);
      const forwarded: ForwardResult = { k: "verify", result: answer.result, triggered: answer.triggered };
      if (answer.limits !== undefined && answer.limits.length > 0) forwarded.limits = [...answer.limits];
      if (answer.balance !== undefined) forwarded.balance = answer.balance;
      return forwarded;
    }
    const { limiter, durability, nowMs } = this.options;
    const check: LimitCheck = { key: item.key, limit: item.limit, durationMs: item.durationMs, cost: item.cost };
    if (typeof item.group === "string") {
      check.group = item.group;
      check.groupEntriesMax = limiterCountersPerNamespaceMax;
    }
    const answer = await judgeLimitHere(limiter, durability, check, nowMs(), (touched) =>
      this.coverSubject(item.subject, touched),
    );
    return { k: "limit", ...answer };
  }

  /** Confirms the async rounds every peer taken for up has merged. */
  private confirmAsync(nowMs: number): void {
    const live = this.voters.filter((peer) => peer !== this.nodeId && this.liveness.isUp(peer, nowMs));
    this.asyncLimits.confirmLive(live);
  }

  /** One beat to every peer (the timer calls it every reconcile period). */
  beat(): void {
    const { transport, nowMs } = this.options;
    this.refreshVoters();
    const voters = this.voters;
    if (voters.length <= 1) return;
    const now = nowMs();
    const { round, reports: asyncCounts, nowMs: asyncNowMs, unconfirmedSinceMs } = this.asyncLimits.report(now);
    this.confirmAsync(now);
    for (const peer of voters) {
      if (peer === this.nodeId || this.beatsInFlight.has(peer)) continue;
      this.beatsInFlight.add(peer);
      transport.call(peer, { t: "beat", asyncCounts, asyncNowMs, asyncUnconfirmedSinceMs: unconfirmedSinceMs }).then(
        (reply) => {
          this.beatsInFlight.delete(peer);
          if (reply === "notSent") this.liveness.lost(peer);
          else if (reply.t === "beat") {
            this.liveness.heard(peer, nowMs());
            // Its reply confirms it merged this round's async counts (serve merges, then replies).
            this.asyncLimits.confirmedByPeer(peer, round);
            this.confirmAsync(nowMs());
          }
        },
        () => this.beatsInFlight.delete(peer),
      );
    }
    if (now - this.lastPruneMs >= pruneEveryMs) {
      this.lastPruneMs = now;
      this.asyncLimits.prune(now);
      this.successor.prune(now);
      this.owner.prune(now - ownerCoveragePruneAfterMs);
      this.copies.prune(now - ownerCoveragePruneAfterMs);
    }
  }
}

function verifyAnswerOf(result: ForwardResult): VerifiedAnswer {
  if (result.k === "verify") {
    const answer: VerifiedAnswer = { result: result.result, triggered: result.triggered };
    if (result.limits !== undefined) answer.limits = result.limits;
    if (result.balance !== undefined) answer.balance = result.balance;
    return answer;
  }
  if (result.k === "error") throw errorOfResult(result);
  throw limitUnavailable("unexpected answer to a forwarded verification");
}

function errorResult(error: unknown): ForwardResult {
  if (error instanceof V1Error)
    return { k: "error", status: error.statusCode, code: error.code, message: error.message };
  const code: V1ErrorCode = "INTERNAL_SERVER_ERROR";
  return { k: "error", status: 500, code, message: error instanceof Error ? error.message : String(error) };
}
