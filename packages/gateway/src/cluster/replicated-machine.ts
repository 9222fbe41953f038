// The key-state machine as a Raft StateMachine. Every node applies the same committed entries in
// the same order; a command proposed here (origin == this process) hands its outcome to the
// request waiting for it, so the answer is the outcome of the entry as applied on this node
// (read-your-writes on the answering node). Address-book entries go to `onPeer`.
import type { CommandOutcome, KeyCommand } from "@keyraft/core";
import type { Entry, Snapshot, StateMachine } from "@keyraft/raft";
import type { ReplicatedStateMachine } from "../store/types.js";
import {
  decodeEntries,
  decodeSnapshotSteps,
  encodeSnapshotSliced,
  snapshotSliceRecords,
  type ClusterEntry,
} from "./entry-codec.js";
import { TurnBudget } from "./turn-budget.js";

/**
 * A snapshot's encoding (and, on a node installing one, its decoding and restore) takes at most
 * this long per event-loop turn before requests get theirs:
 * with requests of ~40 µs and 32 clients, a turn serves them in ~1.3 ms, so the snapshot takes
 * under half the CPU while verifications go on at over half their rate (turn-budget.ts says why
 * the budget is in ms).
 */
export const snapshotTurnBudgetMs = 1;

export interface ReplicatedMachineHooks {
  /** This process's origin tag (node id + a per-process nonce): entries it proposed. */
  origin: string;
  /** A command proposed by this process was applied at `index` with `outcome`. */
  onOwnApplied(seq: number, outcome: CommandOutcome, index: number): void;
  /** An address-book change was applied (also called for every entry of an installed snapshot). */
  onPeer(id: string, url: string | null): void;
  /** Any entry was applied (for metrics: applied index, propagation). */
  onApplied?(index: number): void;
  /** A snapshot began to be captured and encoded (for metrics: its duration). */
  onSnapshotStarted?(): void;
}

export class ReplicatedKeyMachine implements StateMachine {
  /** The replicated address book (members added at run time), part of every snapshot. */
  readonly peers = new Map<string, string>();
  private appliedIndexValue = 0;

  constructor(
    private readonly machine: ReplicatedStateMachine<KeyCommand, CommandOutcome>,
    private readonly hooks: ReplicatedMachineHooks,
  ) {}

  get appliedIndex(): number {
    return this.appliedIndexValue;
  }

  apply(entry: Entry): void {
    // One Raft entry may hold a batch (entry-codec.ts): its parts apply in order at this index.
    const decoded = decodeEntries(entry.data);
    this.appliedIndexValue = entry.index; // apply is synchronous: waiters resolved below run after it
    for (const part of decoded) this.applyOne(part, entry.index);
    this.hooks.onApplied?.(entry.index);
  }

  private applyOne(decoded: ClusterEntry, index: number): void {
    switch (decoded.kind) {
      case "command": {
        const outcome = this.machine.apply(decoded.command);
        if (decoded.origin === this.hooks.origin) this.hooks.onOwnApplied(decoded.seq, outcome, index);
        break;
      }
      case "peer":
        if (decoded.url === null) this.peers.delete(decoded.id);
        else this.peers.set(decoded.id, decoded.url);
        this.hooks.onPeer(decoded.id, decoded.url);
        break;
      default: {
        const unknown: never = decoded;
        throw new Error(`apply: unknown entry ${String(unknown)}`);
      }
    }
  }

  /**
   * Captures the state at the applied index now (arrays of the live records, which later commands
   * replace but never edit), then encodes it a slice per event-loop turn: verifications, and the
   * Raft loop, go on while a large state is written (one encoding blocked everything for ~0.6 s
   * at 170,000 keys).
   */
  async takeSnapshot(): Promise<Uint8Array[]> {
    this.hooks.onSnapshotStarted?.();
    // The records and the address book at this applied index, taken at once (lists of the live
    // records, no copy); the encoding then runs in slices, snapshotTurnBudgetMs of them per turn.
    const keys = this.machine.capture();
    const peers = Object.fromEntries(this.peers);
    const budget = new TurnBudget(snapshotTurnBudgetMs, () => performance.now());
    return encodeSnapshotSliced({ keys, peers }, () => budget.pause());
  }

  /**
   * Decodes and restores slices (`snapshotSliceRecords` records each) in snapshotTurnBudgetMs per
   * event-loop turn, as takeSnapshot encodes: a joining node's loop keeps answering its
   * transport's pings and frames while a large state installs (the Raft loop awaits this; no entry
   * applies meanwhile). The key state changes at once, in the last slice.
   */
  async installSnapshot(snapshot: Snapshot): Promise<void> {
    const budget = new TurnBudget(snapshotTurnBudgetMs, () => performance.now());
    const decoded = await budget.run(decodeSnapshotSteps(snapshot.data));
    // Decoded here and held by nothing else: the state adopts the records instead of copying them.
    await budget.run(this.machine.restoreSteps(decoded.keys, snapshotSliceRecords, "adopt"));
    this.peers.clear();
    for (const [id, url] of Object.entries(decoded.peers)) {
      this.peers.set(id, url);
      this.hooks.onPeer(id, url);
    }
    this.appliedIndexValue = snapshot.metadata.index;
    this.hooks.onApplied?.(snapshot.metadata.index);
  }
}
