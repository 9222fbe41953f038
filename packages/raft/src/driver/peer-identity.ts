// Which cluster a node belongs to, and which incarnation of each member it has met. A member whose
// data directory was wiped comes back with an empty log and no memory of its votes: let in, it
// could vote twice in a term or found a second cluster under the same ids. So every data directory
// draws an incarnation when it is created, each node remembers (durably) the incarnation of every
// peer it has authenticated, and a peer stating another one is refused in the handshake. The
// member rejoins only as a new member: once "remove" or "addLearner" of its id is applied, the old
// record is forgotten and the next incarnation to connect is recorded.
//
// A data directory restored from an older copy of itself (a backup, a VM snapshot) keeps its
// incarnation but forgets votes and entries its node already promised. So each node also keeps,
// per peer incarnation, a mark of the most that peer's data directory is known to hold (PeerMark),
// learned only from messages the peer sends after its writes are durable; the handshake states what
// the directory holds now (DurableState) and a peer stating less than its mark is refused. Why the
// comparison never refuses a directory that was not rolled back:
// - term: a node's persisted term never decreases, and every message it sends carries a term it
//   has persisted (votes and acknowledgements after their write; a leader's appends, heartbeats and
//   snapshot chunks only once their term is durable, core/raft.ts sendableBeforePersist), except
//   pre-votes and their answers, which carry a term not yet adopted and are not counted;
// - vote: a granted vote in term T is sent after the vote is persisted, and a node never changes its
//   vote within a term, so while its term is T its vote is still the one it granted;
// - log index: an append acknowledged in term T (to T's only leader) is durable before the answer
//   leaves, and while the node stays in term T its log can only be changed by that leader, whose
//   appends never conflict with what it was acknowledged (a node truncates only a suffix whose term
//   differs from the leader's); a snapshot from it replaces the log only above that index. The
//   leader of T itself states its commit index in its appends and heartbeats: it counts its own
//   copy only once it is durable, and never truncates its own log. A higher term may truncate a
//   log, so a mark of a log index holds for its term only.
import { createHmac, randomBytes } from "node:crypto";
import type { ConfState, NodeId } from "../core/types.js";
import type { DurableState, IdentityRefusal, PeerIdentity } from "../transport/handshake.js";

/** What a node keeps on disk next to its Raft data (see storage/identity-file.ts). */
export interface IdentityRecord {
  /** The cluster this node belongs to; "" until a joining node learns it from a peer. */
  cluster: string;
  /** This data directory's incarnation, drawn when it was created. */
  incarnation: string;
  /** The incarnation of every peer authenticated so far. */
  peers: Record<NodeId, string>;
  /** Index of the last membership change applied to `peers` (a replay after a restart must not apply it again). */
  confIndex: number;
  /** The most each peer's data directory (the incarnation in `peers`) is known to hold; absent in files of earlier releases. */
  marks?: Record<NodeId, PeerMark>;
  /**
   * False while this incarnation may not take part yet: a founder's new data directory waits until
   * every founding peer accepted it (see RaftNode's probe). Absent in files of earlier releases: true.
   */
  admitted?: boolean;
  /** The founding peers that accepted this incarnation so far (kept across restarts until admitted). */
  admittedBy?: NodeId[];
}

/** What a peer's data directory is known to hold: it told this node so after writing it (see above). */
export interface PeerMark {
  /** The highest term of a message it sent (pre-votes aside): its persisted term is at least this. */
  term: number;
  /**
   * The highest index its log is known to reach in `term` (an index it acknowledged, or, as leader,
   * committed): while its term is `term`, its log reaches at least this.
   */
  logIndex: number;
  /** The highest term in which it granted this node its vote: while its term is that, its vote is for this node. */
  voteTerm: number;
}

/** What observe() needs of a received Raft message. */
export interface ObservedMessage {
  type: string;
  term: number;
  index?: number;
  commit?: number;
  reject?: boolean;
  preVote?: boolean;
}

export interface IdentityStore {
  /** The stored record, or null for a data directory that has none yet. */
  load(): IdentityRecord | null;
  /** Replaces the record durably before returning (it is written rarely: a new peer, a membership change). */
  save(record: IdentityRecord): void;
}

/** Peers remembered at most (as many as the transport's address book allows, with room for removed ones). */
export const knownPeersMax = 256;

/** A fresh incarnation: 8 random bytes, hex. */
export function newIncarnation(): string {
  return randomBytes(8).toString("hex");
}

/**
 * The id of a cluster founded by `voters` with `secret`: every founding member computes the same one
 * from the same configuration; a joining node learns it from its first peer instead.
 */
export function foundingClusterId(voters: readonly NodeId[], secret: Uint8Array | string): string {
  const mac = createHmac("sha256", secret);
  mac.update("keyraft-cluster-id");
  for (const id of [...voters].sort()) mac.update(`\0${id}`);
  return mac.digest("hex").slice(0, 16);
}

export class PeerIdentities {
  private record: IdentityRecord;

  /** Marks raised since the last save that were not worth a write of their own (see observe). */
  private marksDirty = false;

  /** Loads the record, or creates one (a fresh incarnation) for a new data directory. `fresh` tells which. */
  constructor(
    private readonly store: IdentityStore,
    cluster: string,
    /** This node's id (a peer's vote is compared with it). */
    private readonly selfId: NodeId = "",
  ) {
    const loaded = store.load();
    this.fresh = loaded === null;
    this.record = loaded ?? {
      cluster,
      incarnation: newIncarnation(),
      peers: {},
      confIndex: 0,
      marks: {},
      admitted: false,
      admittedBy: [],
    };
    let changed = loaded === null;
    if (this.record.cluster === "" && cluster !== "") {
      this.record.cluster = cluster;
      changed = true;
    }
    if (this.record.marks === undefined) {
      // A file of a release before marks: what its peers sent is unknown, so every peer it knows
      // counts as having acted (see check: such an incarnation is never replaced).
      const unknown: PeerMark = { term: 0, logIndex: 0, voteTerm: 0 };
      this.record.marks = Object.fromEntries(Object.keys(this.record.peers).map((id) => [id, unknown]));
      changed = true;
    }
    if (changed) store.save(this.record);
  }

  /** True when this data directory had no identity record: it was created by this process. */
  readonly fresh: boolean;

  get own(): PeerIdentity {
    return { cluster: this.record.cluster, incarnation: this.record.incarnation };
  }

  /** Whether this incarnation may take part (see IdentityRecord.admitted). */
  get admitted(): boolean {
    return this.record.admitted !== false;
  }

  /** The founding peers that accepted this incarnation so far. */
  get admittedBy(): ReadonlySet<NodeId> {
    return new Set(this.record.admittedBy ?? []);
  }

  /** `peer` accepted this incarnation (saved at once: the acceptance counts across restarts). */
  admitBy(peer: NodeId): void {
    if (this.admittedBy.has(peer)) return;
    this.record = { ...this.record, admittedBy: [...(this.record.admittedBy ?? []), peer] };
    this.save();
  }

  /** This incarnation may take part from now on (every founding peer accepted it, or it joins). */
  admit(): void {
    if (this.admitted) return;
    this.record = { ...this.record, admitted: true };
    this.save();
  }

  /**
   * Whether a message sent by `incarnation` of `peer` comes from the incarnation this node accepts:
   * a frame still in flight from a replaced incarnation must not be stepped (it could carry a vote
   * or an acknowledgement the new one knows nothing of). Unknown either way: true.
   */
  isCurrent(peer: NodeId, incarnation: string): boolean {
    const known = this.record.peers[peer];
    return incarnation === "" || known === undefined || known === incarnation;
  }

  /** The handshake's check of an authenticated peer: null to accept, else why it is refused. */
  check(peer: NodeId, identity: PeerIdentity): IdentityRefusal | null {
    if (identity.cluster !== "" && this.record.cluster !== "" && identity.cluster !== this.record.cluster) {
      return refusal(`peer ${peer} belongs to cluster ${identity.cluster}, this node to ${this.record.cluster}`);
    }
    let changed = false;
    if (this.record.cluster === "" && identity.cluster !== "") {
      this.record = { ...this.record, cluster: identity.cluster }; // a joining node learns its cluster
      changed = true;
    }
    let known = this.record.peers[peer];
    if (
      identity.admitting === true &&
      identity.incarnation !== "" &&
      known !== undefined &&
      known !== identity.incarnation &&
      !this.hasActed(peer)
    ) {
      // The incarnation it knew never sent this node a Raft message (say it was met in a founding
      // probe and wiped before it took part): nothing here relies on it. The new one waits until
      // every founding peer accepted it, so a peer that a message of the old one reached refuses
      // it still; this node lets it take the old one's place.
      this.record = { ...this.record, peers: { ...this.record.peers, [peer]: identity.incarnation } };
      known = identity.incarnation;
      changed = true;
    }
    if (identity.incarnation !== "" && known !== undefined && known !== identity.incarnation) {
      return replacedRefusal(
        `peer ${peer}'s data directory was replaced (incarnation ${known}, now ${identity.incarnation}): ` +
          `it may rejoin only as a new member (remove it, then add it back as a learner)`,
      );
    }
    const behind = known === identity.incarnation ? this.rolledBack(peer, identity.durable) : null;
    if (behind !== null) {
      if (changed) this.save();
      return {
        reason:
          `peer ${peer}'s data directory is older than what it already told this node (${behind}): ` +
          `it was restored from a copy; it may rejoin only as a new member (remove it, empty it, add it back as a learner)`,
        rolledBack: true,
      };
    }
    if (identity.incarnation !== "" && known === undefined && Object.keys(this.record.peers).length < knownPeersMax) {
      this.record = { ...this.record, peers: { ...this.record.peers, [peer]: identity.incarnation } };
      changed = true;
    }
    if (changed) this.save();
    return null;
  }

  /**
   * Whether the recorded incarnation of `peer` ever sent this node a Raft message other than a
   * pre-vote: its first one leaves a mark, saved before the message is stepped (observe), so a
   * peer with no mark has had no vote, acknowledgement or append counted here. (Whether it acted
   * with other peers, only they can tell: each refuses by its own mark.)
   */
  private hasActed(peer: NodeId): boolean {
    return this.record.marks?.[peer] !== undefined;
  }

  /** What `peer`'s stated durable state lacks of its mark, or null (nothing stated, no mark, or not behind). */
  private rolledBack(peer: NodeId, durable: DurableState | undefined): string | null {
    const mark = this.record.marks?.[peer];
    if (durable === undefined || mark === undefined) return null;
    if (durable.term < mark.term) return `its term is ${durable.term}, it sent term ${mark.term}`;
    if (durable.term === mark.term && durable.lastIndex < mark.logIndex)
      return `its log ends at ${durable.lastIndex}, it held ${mark.logIndex} in term ${mark.term}`;
    if (mark.voteTerm > 0 && durable.term === mark.voteTerm && durable.vote !== this.selfId)
      return `its vote in term ${durable.term} is "${durable.vote}", it voted for ${this.selfId}`;
    return null;
  }

  /**
   * A Raft message from `peer`, sent by the data directory of `incarnation`: raises its mark. A
   * higher term or a vote is saved at once (a few writes per election); a higher log index (every
   * append) only at the next flushMarks(), so a crash of this node may forget the last ones.
   */
  observe(peer: NodeId, incarnation: string, message: ObservedMessage): void {
    if (incarnation === "" || this.record.peers[peer] !== incarnation) return;
    const isVote = message.type === "vote" || message.type === "voteResp";
    if (isVote && message.preVote === true) return; // a pre-vote's term is not adopted (nor persisted)
    const mark = this.record.marks?.[peer] ?? { term: 0, logIndex: 0, voteTerm: 0 };
    const next = { ...mark };
    if (message.term > next.term) {
      next.term = message.term;
      next.logIndex = 0; // a higher term may have truncated the log: log indexes count per term
    }
    if (message.term === next.term) {
      if (message.type === "appResp" && message.reject !== true)
        next.logIndex = Math.max(next.logIndex, message.index ?? 0);
      // A leader's commit index: its own copy of those entries is durable (see above).
      if (message.type === "app" || message.type === "heartbeat")
        next.logIndex = Math.max(next.logIndex, message.commit ?? 0);
    }
    if (message.type === "voteResp" && message.reject !== true) next.voteTerm = Math.max(next.voteTerm, message.term);
    if (next.term === mark.term && next.logIndex === mark.logIndex && next.voteTerm === mark.voteTerm) return;
    this.record = { ...this.record, marks: { ...this.record.marks, [peer]: next } };
    if (next.term !== mark.term || next.voteTerm !== mark.voteTerm) this.save();
    else this.marksDirty = true;
  }

  /** Saves log indexes raised since the last save (called now and then, and at stop). */
  flushMarks(): void {
    if (this.marksDirty) this.save();
  }

  private save(): void {
    this.marksDirty = false;
    this.store.save(this.record);
  }

  /**
   * A snapshot at `index` with membership `conf` replaced the log: the removals it covers were never
   * applied one by one, so every recorded peer that is not a member any more is forgotten.
   */
  forgetNonMembers(conf: ConfState, index: number): void {
    if (index <= this.record.confIndex) return;
    const members = new Set([...conf.voters, ...conf.learners]);
    const peers = Object.fromEntries(Object.entries(this.record.peers).filter(([id]) => members.has(id)));
    const marks = Object.fromEntries(Object.entries(this.record.marks ?? {}).filter(([id]) => members.has(id)));
    this.record = { ...this.record, peers, marks, confIndex: index };
    this.save();
  }

  /**
   * The membership change at `index` removed `peer` or added it anew: whichever incarnation connects
   * next is accepted. Changes at or below an index already seen are replays (after a restart): ignored.
   */
  forget(peer: NodeId, index: number): void {
    if (index <= this.record.confIndex) return;
    const peers = { ...this.record.peers };
    delete peers[peer];
    const marks = { ...this.record.marks };
    delete marks[peer];
    this.record = { ...this.record, peers, marks, confIndex: index };
    this.save();
  }
}

function refusal(reason: string): IdentityRefusal {
  return { reason, rolledBack: false };
}

function replacedRefusal(reason: string): IdentityRefusal {
  return { reason, rolledBack: false, replaced: true };
}

/** An identity store in memory (tests, and nodes that opt out of a data directory). */
export class MemoryIdentityStore implements IdentityStore {
  private record: IdentityRecord | null = null;

  load(): IdentityRecord | null {
    return this.record === null ? null : structuredClone(this.record);
  }

  save(record: IdentityRecord): void {
    this.record = structuredClone(record);
  }
}
