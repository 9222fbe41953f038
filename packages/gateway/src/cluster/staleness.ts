// How stale this node's replica may be. A probe is a Raft read-index request: it completes only
// after a leader confirmed, with a heartbeat round acknowledged by a quorum, that it still leads,
// and after this node applied everything committed when the probe started. So when a probe that
// started at time t completes, this node's state is at least as fresh as the cluster's at t:
// staleness = now - start of the latest completed probe. On the leader this is the time since
// check-quorum last confirmed it; on a follower, the time since it last heard from a leader
// backed by a quorum. A partitioned or lagging node stops completing probes and its staleness grows.
import { assert } from "@keyraft/core";

export interface StalenessOptions {
  /** Raft's read barrier (RaftNode.readIndex). */
  readIndex(): Promise<void>;
  nowMs(): number;
  /** A new probe starts every this many ms (while fewer than probesInFlightMax are running). */
  probeIntervalMs: number;
  maxStalenessMs: number;
}

/** Probes running at once: a lost one (dead leader) must not stop the next ones for its whole timeout. */
export const probesInFlightMax = 4;

export class StalenessMonitor {
  private confirmedAtMs: number | null = null;
  private inFlight = 0;
  private timer: NodeJS.Timeout | null = null;
  private readonly startedAtMs: number;

  constructor(private readonly options: StalenessOptions) {
    assert(options.probeIntervalMs > 0, "StalenessMonitor: positive probe interval");
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

  /** Whether this node has ever been confirmed fresh since it started. */
  get everConfirmed(): boolean {
    return this.confirmedAtMs !== null;
  }

  isStale(): boolean {
    return this.confirmedAtMs === null || this.stalenessMs() > this.options.maxStalenessMs;
  }

  private probe(): void {
    if (this.inFlight >= probesInFlightMax) return;
    this.inFlight++;
    const startedAtMs = this.options.nowMs();
    this.options.readIndex().then(
      () => {
        this.inFlight--;
        if (this.confirmedAtMs === null || startedAtMs > this.confirmedAtMs) this.confirmedAtMs = startedAtMs;
      },
      () => {
        this.inFlight--; // no leader, leader changed, timeout: the staleness keeps growing
      },
    );
  }
}
