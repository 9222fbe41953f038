// The owner's side of the reservations (docs/counters.md §2): an admission of a subject this node
// owns is answered only once its successor acknowledged a reservation covering the bucket's
// count, in the generation of the last hand-back this node restored. Before the first hand-back
// from a successor (at start), and after an ask was refused (the successor took over, or it
// restarted), decisions on that successor's subjects wait for a hand-back: its counts are
// restored into the limiter first, so no admission is ever judged on counts older than it.
// Asks go ahead of need (half a chunk early), batched per successor, so most admissions wait for
// nothing.
import {
  movedBuckets,
  nextReservation,
  OwnerReservations,
  type SlidingWindowLimiter,
  type BucketCount,
} from "@keyraft/core";
import type { Logger } from "pino";
import { limitUnavailable, withTimeout } from "./errors.js";
import type { PeerLiveness } from "./liveness.js";
import { parseReservationKey, reservationKey } from "./subject.js";
import type { CounterRequest, CounterTransport, WireAsk, WireBucket } from "./wire.js";

/** Admissions waiting for coverage per successor; past it new ones are answered 503. */
export const coverWaitersMax = 100_000;
/** Asks per reserve message. */
/** Buckets held at a hand-back whose coverage at the successor decisions wait for (the rest is asked for without waiting). */
export const heldCoverWaitMax = 4096;
/** Nodes a new owner asks for counts of its subjects (collect), itself and its successor included. */
export const collectNodesMax = 64;
export const reserveAsksMax = 1024;

interface Waiter {
  key: string;
  bucketStartMs: number;
  count: number;
  limit: number;
  resolve(): void;
  reject(error: Error): void;
}

interface Link {
  reservations: OwnerReservations | null;
  /** The successor's boot id the generation belongs to. */
  boot: string;
  handingBack: Promise<void> | null;
  waiters: Waiter[];
  /** Highest count asked per bucket id, while the ask is in flight. */
  inFlight: Map<string, number>;
  /** Asks to send at the next flush. */
  queued: Map<string, WireAsk>;
  flushScheduled: boolean;
  /** Every count held at the hand-back is covered: reserve messages tell the successor (`covered`). */
  heldCovered: boolean;
}

export interface OwnerSideOptions {
  transport: CounterTransport;
  limiter: SlidingWindowLimiter;
  liveness: PeerLiveness;
  timeoutMs: number;
  /** Every node this one has known as a voter (itself included), at most successorOwnersMax. */
  knownNodes(): readonly string[];
  /** Whether the limiter key's subject ranks this node first and `successor` second (over the voters now). */
  covers(successor: string, limiterKey: string): boolean;
  nowMs(): number;
  logger: Logger;
}

function bucketId(key: string, bucketStartMs: number): string {
  return `${key}\u0000${bucketStartMs}`;
}

export class OwnerSide {
  private readonly links = new Map<string, Link>();
  handBacksRestored = 0;
  asksSent = 0;
  /** Voter changes seen, and how many of them every voter has confirmed applying (collect's `sameVoters`). */
  private votersChanges = 0;
  private votersConfirmed = 0;

  constructor(private readonly options: OwnerSideOptions) {}

  private link(successor: string): Link {
    let link = this.links.get(successor);
    if (link === undefined) {
      link = {
        reservations: null,
        boot: "",
        handingBack: null,
        waiters: [],
        inFlight: new Map(),
        queued: new Map(),
        flushScheduled: false,
        heldCovered: false,
      };
      this.links.set(successor, link);
    }
    return link;
  }

  /** null when decisions on `successor`'s subjects may be made now; else a hand-back to wait for (rejects: answer 503). */
  ready(successor: string): Promise<void> | null {
    const link = this.link(successor);
    // A hand-back in progress holds its generation already while the counts held here are being
    // covered at the successor: decisions wait for that too.
    if (link.handingBack !== null) return link.handingBack;
    if (link.reservations !== null) return null;
    link.handingBack ??= this.handBack(successor, link).finally(() => {
      link.handingBack = null;
    });
    return link.handingBack;
  }

  private async handBack(successor: string, link: Link): Promise<void> {
    const { transport, limiter, timeoutMs } = this.options;
    // With the voters this node applied: a successor that applied others refuses (a membership
    // change in flight), so counts are handed over only once both place subjects alike.
    const voters = [...transport.voters()];
    const reply = await withTimeout(transport.call(successor, { t: "handBack", voters }), timeoutMs, () =>
      limitUnavailable(`no hand-back from ${successor} in time`),
    );
    if (reply === "notSent") {
      this.options.liveness.lost(successor);
      throw limitUnavailable(`no connection to ${successor}, which holds this limit's reservations`);
    }
    if (reply.t !== "handBack")
      throw limitUnavailable(`${successor} did not hand back (${reply.t === "refused" ? reply.message : reply.t})`);
    this.options.liveness.heard(successor, this.options.nowMs());
    const changes = this.votersChanges;
    const others = await this.collect(successor, voters, reply.nodes ?? [], changes > this.votersConfirmed);
    this.votersConfirmed = Math.max(this.votersConfirmed, changes);
    if (link.reservations !== null) return; // a concurrent hand-back already restored (cannot happen: one at a time)
    const nowMs = this.options.nowMs();
    const width = (bucket: { key: string }) => limiter.bucketWidthMs(parseReservationKey(bucket.key)?.durationMs ?? 1);
    // Filed on the successor's clock: one bucket later here (clocks apart by less than a bucket).
    for (const bucket of movedBuckets([...reply.buckets, ...others], width, nowMs)) {
      const parsed = parseReservationKey(bucket.key);
      if (parsed === null) continue;
      limiter.restoreMovedBucket({
        key: parsed.limiterKey,
        limit: bucket.limit,
        durationMs: parsed.durationMs,
        bucketStartMs: bucket.bucketStartMs,
        count: bucket.count,
      });
    }
    // Only now, with every count the successor holds restored, may this node admit again.
    link.reservations = new OwnerReservations(reply.generation);
    link.heldCovered = false;
    link.boot = reply.boot;
    this.handBacksRestored++;
    this.options.logger.info(
      { successor, generation: reply.generation, buckets: reply.buckets.length },
      "rate limits: hand-back restored; serving owned limits",
    );
    // Every count held here of the successor's subjects (this node's own, restored from its disk
    // or handed back) is covered there before this node serves: a successor that changed with the
    // voters, or restarted, holds none of them, and taking over from nothing it would admit them
    // again if this node died (the fault schedules with membership changes found it).
    // Past heldCoverWaitMax buckets the rest is asked for without waiting (decisions would wait
    // too long, and the waiters are bounded): their coverage then follows within a round trip.
    const held = limiter.snapshot(nowMs).filter((bucket) => this.options.covers(successor, bucket.key));
    for (let start = heldCoverWaitMax; start < held.length; start += heldCoverWaitMax)
      this.cover(successor, held.slice(start, start + heldCoverWaitMax))?.catch(() => undefined);
    const covering = held.length === 0 ? null : this.cover(successor, held.slice(0, heldCoverWaitMax));
    if (covering !== null)
      await covering.catch((error: unknown) => {
        link.reservations = null; // the next decision asks for a hand-back again
        link.heldCovered = false;
        throw error;
      });
    // Only now may the successor take over from what it reserved (it holds every count held here).
    // Told at once, and again with every later ask of this generation (a lost message costs a
    // takeover's availability, never a count).
    if (link.reservations !== null && link.reservations.generation === reply.generation) {
      link.heldCovered = true;
      this.send(successor, link, link.reservations, []);
    }
  }

  /**
   * The counts of this node's subjects (over `voters`) held by any node but it and its successor:
   * after two membership changes in quick succession they may sit on a node the subjects passed
   * through (one that took them over or had them handed back, and was replaced before it handed
   * them on; docs/counters.md). Every node this one or its successor knows is asked, then every
   * node those know, up to collectNodesMax; one that does not answer in time is left out (a node
   * down with counts nobody else holds takes them along). With `confirmVoters` (the first hand-back
   * after a voter change) every voter must answer that it applied `voters`, else this rejects (503).
   */
  private async collect(
    successor: string,
    voters: string[],
    successorKnows: readonly string[],
    confirmVoters: boolean,
  ): Promise<WireBucket[]> {
    const { transport, timeoutMs } = this.options;
    const asked = new Set([transport.nodeId, successor]);
    // After a voter change every voter must have applied this node's voters before it serves
    // (docs/counters.md, membership changes): one that lags may still serve or take over this
    // node's subjects with the pairing of before (a successor then missing what this node had
    // covered elsewhere since), so its answer must say it no longer can. The successor said so
    // by handing back (a hand-back is refused over other voters).
    const mustConfirm = new Set(confirmVoters ? voters.filter((node) => !asked.has(node)) : []);
    const found: WireBucket[] = [];
    // The voters first: the frontier is cut at collectNodesMax.
    let frontier = [...new Set([...mustConfirm, ...this.options.knownNodes(), ...successorKnows])].filter(
      (node) => !asked.has(node),
    );
    while (frontier.length > 0) {
      frontier = frontier.slice(0, Math.max(0, collectNodesMax - asked.size));
      for (const node of frontier) asked.add(node);
      const answers = await Promise.all(
        frontier.map((node) =>
          withTimeout(transport.call(node, { t: "collect", voters }), timeoutMs, () =>
            limitUnavailable(`no counts from ${node} in time`),
          ).then(
            (answer) => (answer !== "notSent" && answer.t === "collect" ? answer : null),
            () => null,
          ),
        ),
      );
      const next = new Set<string>();
      for (const [i, answer] of answers.entries()) {
        if (answer !== null && answer.sameVoters === true) mustConfirm.delete(frontier[i]!);
        if (answer === null) continue;
        found.push(...answer.buckets);
        for (const node of answer.nodes) if (!asked.has(node)) next.add(node);
      }
      frontier = [...next];
    }
    if (mustConfirm.size > 0)
      throw limitUnavailable(
        `${[...mustConfirm].join(", ")} did not confirm applying the voters ${voters.join(",")} (a membership change in flight)`,
      );
    return found;
  }

  /**
   * Coverage of an admission just judged (synchronously after `ready` returned null): null when
   * every touched bucket is covered, else a promise that resolves once the successor acknowledged
   * it, and rejects (503) if the generation is lost or the successor does not answer in time.
   */
  cover(successor: string, touched: readonly BucketCount[]): Promise<void> | null {
    const link = this.link(successor);
    const reservations = link.reservations;
    // Judged while no generation is held (lost between ready() and the decision): its counts may
    // predate the hand-back, so it is never answered; the count stays (it can only under-admit).
    if (reservations === null)
      return Promise.reject(limitUnavailable(`the reservations at ${successor} are being handed back`));
    let waits: Promise<void>[] | null = null;
    for (const bucket of touched) {
      const key = reservationKey(bucket.durationMs, bucket.key);
      if (!reservations.covered(key, bucket.bucketStartMs, bucket.count)) {
        if (link.waiters.length >= coverWaitersMax)
          return Promise.reject(limitUnavailable("too many admissions waiting for their reservation"));
        waits ??= [];
        waits.push(
          new Promise<void>((resolve, reject) =>
            link.waiters.push({
              key,
              bucketStartMs: bucket.bucketStartMs,
              count: bucket.count,
              limit: bucket.limit,
              resolve,
              reject,
            }),
          ),
        );
      }
      // Ask ahead, so the next admissions of the bucket find their count covered.
      const ahead = Math.min(bucket.limit, bucket.count + Math.ceil(Math.max(1, Math.ceil(bucket.limit / 8)) / 2));
      if (!reservations.covered(key, bucket.bucketStartMs, ahead))
        this.ask(successor, link, reservations, key, bucket.limit, bucket.bucketStartMs, bucket.count);
    }
    if (waits === null) return null;
    return waits.length === 1 ? waits[0]! : Promise.all(waits).then(() => undefined);
  }

  private ask(
    successor: string,
    link: Link,
    reservations: OwnerReservations,
    key: string,
    limit: number,
    bucketStartMs: number,
    count: number,
  ): void {
    const id = bucketId(key, bucketStartMs);
    if ((link.inFlight.get(id) ?? -1) >= count) return;
    const want = nextReservation(count, limit);
    const queued = link.queued.get(id);
    if (queued === undefined || queued.count < want)
      link.queued.set(id, { key, limit, bucketStartMs, count: want, generation: reservations.generation });
    link.inFlight.set(id, want);
    if (!link.flushScheduled) {
      link.flushScheduled = true;
      setImmediate(() => this.flush(successor, link));
    }
  }

  private flush(successor: string, link: Link): void {
    link.flushScheduled = false;
    const reservations = link.reservations;
    if (reservations === null) {
      link.queued.clear();
      return;
    }
    const asks = [...link.queued.values()];
    link.queued.clear();
    for (let at = 0; at < asks.length; at += reserveAsksMax)
      this.send(successor, link, reservations, asks.slice(at, at + reserveAsksMax));
  }

  private send(successor: string, link: Link, reservations: OwnerReservations, asks: WireAsk[]): void {
    const { transport, timeoutMs } = this.options;
    this.asksSent += asks.length;
    const request: CounterRequest = { t: "reserve", boot: link.boot, asks };
    if (link.heldCovered) request.covered = reservations.generation;
    const answered = withTimeout(transport.call(successor, request), timeoutMs, () =>
      limitUnavailable(`no reservation from ${successor} in time`),
    );
    answered.then(
      (reply) => {
        if (reply === "notSent") {
          this.options.liveness.lost(successor);
          return this.failAsks(
            link,
            asks,
            limitUnavailable(`no connection to ${successor}, which must reserve this limit's counts`),
          );
        }
        if (reply.t !== "reserve" || reply.acks.length !== asks.length)
          return this.failAsks(link, asks, limitUnavailable(`${successor} refused the reservation`));
        this.options.liveness.heard(successor, this.options.nowMs());
        if (link.reservations !== reservations) return; // a newer generation: its own waiters and asks
        let refused = false;
        for (let i = 0; i < asks.length; i++) {
          const ack = reply.acks[i];
          const ask = asks[i]!;
          const id = bucketId(ask.key, ask.bucketStartMs);
          if ((link.inFlight.get(id) ?? -1) <= ask.count) link.inFlight.delete(id);
          if (ack === null || ack === undefined) refused = true;
          else reservations.onAck(ack);
        }
        if (refused) return this.loseGeneration(successor, link);
        this.settleWaiters(successor, link, reservations);
      },
      (error: unknown) => this.failAsks(link, asks, error instanceof Error ? error : limitUnavailable(String(error))),
    );
  }

  /** Resolves the waiters now covered; asks again for the rest (a burst past the asked count). */
  private settleWaiters(successor: string, link: Link, reservations: OwnerReservations): void {
    const rest: Waiter[] = [];
    for (const waiter of link.waiters) {
      if (reservations.covered(waiter.key, waiter.bucketStartMs, waiter.count)) waiter.resolve();
      else rest.push(waiter);
    }
    link.waiters = rest;
    for (const waiter of rest)
      this.ask(successor, link, reservations, waiter.key, waiter.limit, waiter.bucketStartMs, waiter.count);
  }

  private failAsks(link: Link, asks: readonly WireAsk[], error: Error): void {
    const ids = new Set<string>();
    for (const ask of asks) {
      const id = bucketId(ask.key, ask.bucketStartMs);
      ids.add(id);
      if ((link.inFlight.get(id) ?? -1) <= ask.count) link.inFlight.delete(id);
    }
    const rest: Waiter[] = [];
    for (const waiter of link.waiters) {
      if (ids.has(bucketId(waiter.key, waiter.bucketStartMs))) waiter.reject(error);
      else rest.push(waiter);
    }
    link.waiters = rest;
  }

  /**
   * The successor refused an ask of this generation: it took over (or restarted). Every admission
   * judged in this generation and not yet covered is answered 503; the next decisions wait for a
   * hand-back.
   */
  /**
   * The voters changed: this node may now own subjects whose counts it took over or holds
   * uncovered at their successor (a successor new with the voters, or one that already held a
   * generation of this node's and so would not be asked again). Every link starts over: the next
   * decision on a successor's subjects asks it for a hand-back, which covers every count held
   * here of its subjects (admissions waiting for coverage meanwhile are answered 503).
   */
  votersChanged(): void {
    this.votersChanges++;
    for (const [successor, link] of this.links)
      if (link.reservations !== null && link.handingBack === null) this.resetLink(successor, link, "voters changed");
  }

  private loseGeneration(successor: string, link: Link): void {
    this.options.logger.warn(
      { successor, generation: link.reservations?.generation },
      "rate limits: successor refused a reservation (took over or restarted); asking for a hand-back",
    );
    this.resetLink(successor, link, `${successor} took this limit over; handing back`);
  }

  private resetLink(successor: string, link: Link, why: string): void {
    link.reservations = null;
    link.heldCovered = false;
    link.inFlight.clear();
    link.queued.clear();
    const waiters = link.waiters;
    link.waiters = [];
    for (const waiter of waiters) waiter.reject(limitUnavailable(why));
  }

  /** Drops coverage of buckets that left every window. */
  prune(beforeMs: number): void {
    for (const link of this.links.values()) link.reservations?.prune(beforeMs);
  }
}
