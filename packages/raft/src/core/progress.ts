import { assert } from "./assert.js";
import { Inflights } from "./inflights.js";
import type { ProgressState, ProgressStatus } from "./status.js";

/**
 * The leader's view of one follower (etcd's tracker.Progress).
 * probe: one append at a time until the match point is found; replicate: pipelined appends, at
 * most maxInflightMsgs outstanding; snapshot: a snapshot is being sent in chunks, appends paused.
 * Invariant: match < next.
 */
export class Progress {
  match = 0;
  next: number;
  state: ProgressState = "probe";
  /** probe state: an append was sent and not answered; wait for a heartbeat response to retry. */
  probeSent = false;
  /** Heard from since the last check-quorum round. */
  recentActive = false;
  /** snapshot state: the index of the snapshot being sent. */
  pendingSnapshot = 0;
  /** snapshot state: bytes the follower has acknowledged (its next expected offset). */
  snapshotAckedOffset = 0;
  /** snapshot state: bytes sent so far; chunks in [acked, sent) are in flight (at most the inflight window). */
  snapshotSentOffset = 0;
  /** snapshot state: the last chunk has been sent (needed because an empty snapshot has one empty chunk). */
  snapshotAllSent = false;
  /** snapshot state: leader ticks since the acknowledged offset last moved; at electionTicks the window is resent from it. */
  snapshotIdleTicks = 0;
  /**
   * snapshot state: idle ticks before the window is resent (0: electionTicks). Doubles after each
   * idle resend without progress: on a link slower than a window per election timeout, resends
   * would otherwise pile up behind the window still on its way.
   */
  snapshotIdleTicksMax = 0;
  /** snapshot state: the offset the window was last resent from, until the next progress (-1: none); one resend per gap. */
  snapshotResentOffset = -1;
  learner: boolean;
  /** The commit index carried by the last append sent (-1: none yet); a broadcast skips a follower that already has it. */
  commitSent = -1;
  readonly inflights: Inflights;

  constructor(next: number, maxInflight: number, learner: boolean) {
    assert(next >= 1, "progress next must be >= 1");
    this.next = next;
    this.inflights = new Inflights(maxInflight);
    this.learner = learner;
  }

  private resetState(state: ProgressState): void {
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.snapshotAckedOffset = 0;
    this.snapshotSentOffset = 0;
    this.snapshotAllSent = false;
    this.snapshotIdleTicks = 0;
    this.snapshotIdleTicksMax = 0;
    this.snapshotResentOffset = -1;
    this.state = state;
    this.inflights.reset();
  }

  becomeProbe(): void {
    // After a snapshot, resume right after it (or after match, whichever is later).
    const from = this.state === "snapshot" ? Math.max(this.match + 1, this.pendingSnapshot + 1) : this.match + 1;
    this.resetState("probe");
    this.next = from;
  }

  becomeReplicate(): void {
    this.resetState("replicate");
    this.next = this.match + 1;
  }

  becomeSnapshot(snapshotIndex: number): void {
    this.resetState("snapshot");
    this.pendingSnapshot = snapshotIndex;
  }

  /** A successful append response up to `index`. Returns false when it is stale (no progress). */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (this.match < index) {
      this.match = index;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, index + 1);
    return updated;
  }

  /** After sending entries up to `lastIndex` (pipelining in replicate; pause in probe). */
  sentEntries(lastIndex: number, entryCount: number): void {
    if (this.state === "replicate") {
      if (entryCount > 0) {
        this.next = lastIndex + 1;
        this.inflights.add(lastIndex);
      }
    } else if (this.state === "probe") {
      this.probeSent = true;
    } else {
      assert(false, "sentEntries in snapshot state");
    }
  }

  /**
   * A rejection of the append at `rejected`, with the follower's hint. Returns false when the
   * rejection is stale (out of order) and must be ignored.
   */
  maybeDecrTo(rejected: number, matchHint: number): boolean {
    if (this.state === "replicate") {
      if (rejected <= this.match) return false; // stale
      this.next = this.match + 1; // fall back; the caller switches to probe
      return true;
    }
    if (this.next - 1 !== rejected) return false; // not the probe we are waiting on
    this.next = Math.max(Math.min(rejected, matchHint + 1), this.match + 1);
    assert(this.next >= 1, "next must stay >= 1");
    this.probeSent = false;
    return true;
  }

  /** Whether appends to this follower are paused (flow control). */
  isPaused(): boolean {
    switch (this.state) {
      case "probe":
        return this.probeSent;
      case "replicate":
        return this.inflights.full();
      case "snapshot":
        return true;
      default: {
        const never: never = this.state;
        return never;
      }
    }
  }

  toStatus(): ProgressStatus {
    return {
      match: this.match,
      next: this.next,
      state: this.state,
      recentActive: this.recentActive,
      inflight: this.inflights.count,
      pendingSnapshot: this.pendingSnapshot,
      learner: this.learner,
    };
  }
}
