// How stale this node's replica may be. A probe is a Raft read-index request: it completes only
// after a leader confirmed, with a heartbeat round acknowledged by a quorum, that it still leads,
// and after this node applied everything committed when the probe started. So when a probe that
// started at time t completes, this node's state is at least as fresh as the cluster's at t:
// staleness = now - start of the latest completed probe. On the leader this is the time since
// check-quorum last confirmed it; on a follower, the time since it last heard from a leader
// backed by a quorum. A partitioned or lagging node stops completing probes and its staleness grows.
//
// A probe's start is when it asked, not when it finished: a node far behind (a joining node
// installing a snapshot, a member back from a long partition) completes a probe only once it has
// applied the commit index of that moment, which may be many seconds and thousands of entries old
// by then. Judged by staleness alone it would serve (e.g. 27 s < a 30 s bound) while it still
// applies that backlog and answers late. So a node that is not serving starts to only after a
// probe that completes within `caughtUpProbeMsMax`: it then applied the leader's commit index as
// of less than that bound ago, and applies at the cluster's pace. Serving ends when it goes stale.
import { assert } from "@keyraft/core";

export interface StalenessOptions {
  /** Raft's read barrier (RaftNode.readIndex). */
  readIndex(): Promise<void>;
  nowMs(): number;
  /** A new probe starts every this many ms (while fewer than probesInFlightMax are running). */
  probeIntervalMs: number;
  maxStalenessMs: number;
  /**
   * A node that is not serving (it just started, or went stale) starts to serve after a probe that
   * completed within this many ms (it has caught up). At most maxStalenessMs.
   */
  caughtUpProbeMsMax: number;
}

/** Probes running at once: a lost one (dead leader) must not stop the next ones for its whole timeout. */
export const probesInFlightMax = 4;

export class StalenessMonitor {
  private confirmedAtMs: number | null = null;
  /** A quick probe completed since the node started or last went stale (see the top of the file). */
  private caughtUp = false;
  private everCaughtUp = false;
  private inFlight = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly startedAtMs: number;

  constructor(private readonly options: StalenessOptions) {
    assert(options.probeIntervalMs > 0, "StalenessMonitor: positive probe interval");
    assert(
      options.caughtUpProbeMsMax > 0 && options.caughtUpProbeMsMax <= options.maxStalenessMs,
      "StalenessMonitor: caughtUpProbeMsMax in (0, maxStalenessMs]",
    );
    this.startedAtMs = options.nowMs();
  }

  start(): void {
    this.probe();
    this.timer = setInterval(() => this.probe(), this.options.probeIntervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  /** Ms since the freshest confirmation (since start when there was none yet). */
  stalenessMs(): number {
    return Math.max(0, this.options.nowMs() - (this.confirmedAtMs ?? this.startedAtMs));
  }

  get maxStalenessMs(): number {
    return this.options.maxStalenessMs;
  }

  /** Whether this node has ever been confirmed fresh and caught up since it started. */
  get everConfirmed(): boolean {
    return this.everCaughtUp;
  }

  /** Not serving: never confirmed, confirmed too long ago, or not caught up since it last went stale. */
  isStale(): boolean {
    if (this.confirmedAtMs === null || this.stalenessMs() > this.options.maxStalenessMs) {
      this.caughtUp = false; // serving again takes a quick probe (a long stale spell leaves a backlog)
      return true;
    }
    return !this.caughtUp;
  }

  private probe(): void {
    this.isStale(); // ends serving if the node went stale, though no request asked since
    if (this.inFlight >= probesInFlightMax) return;
    this.inFlight++;
    const startedAtMs = this.options.nowMs();
    this.options.readIndex().then(
      () => {
        this.inFlight--;
        if (this.confirmedAtMs === null || startedAtMs > this.confirmedAtMs) this.confirmedAtMs = startedAtMs;
        if (this.options.nowMs() - startedAtMs <= this.options.caughtUpProbeMsMax) {
          this.caughtUp = true;
          this.everCaughtUp = true;
        }
      },
      () => {
        this.inFlight--; // no leader, leader changed, timeout: the staleness keeps growing
      },
    );
  }
}
