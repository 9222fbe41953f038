// Which cluster a node belongs to, and which incarnation of each member it has met. A member whose
// data directory was wiped comes back with an empty log and no memory of its votes: let in, it
// could vote twice in a term or found a second cluster under the same ids. So every data directory
// draws an incarnation when it is created, each node remembers (durably) the incarnation of every
// peer it has authenticated, and a peer stating another one is refused in the handshake. The
// member rejoins only as a new member: once "remove" or "addLearner" of its id is applied, the old
// record is forgotten and the next incarnation to connect is recorded.

import { createHmac, randomBytes } from "node:crypto";
import type { ConfState, NodeId } from "../core/types.js";
import type { PeerIdentity } from "../transport/handshake.js";

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

  /** Loads the record, or creates one (a fresh incarnation) for a new data directory. `fresh` tells which. */
  constructor(
    private readonly store: IdentityStore,
    cluster: string,
  ) {
    const loaded = store.load();
    this.fresh = loaded === null;
    this.record = loaded ?? { cluster, incarnation: newIncarnation(), peers: {}, confIndex: 0 };
    if (this.record.cluster === "" && cluster !== "") this.record.cluster = cluster;
    if (loaded === null || loaded.cluster !== this.record.cluster) store.save(this.record);
  }

  /** True when this data directory had no identity record: it was created by this process. */
  readonly fresh: boolean;

  get own(): PeerIdentity {
    return { cluster: this.record.cluster, incarnation: this.record.incarnation };
  }

  /** The handshake's check of an authenticated peer: null to accept, else why it is refused. */
  check(peer: NodeId, identity: PeerIdentity): string | null {
    if (identity.cluster !== "" && this.record.cluster !== "" && identity.cluster !== this.record.cluster) {
      return `peer ${peer} belongs to cluster ${identity.cluster}, this node to ${this.record.cluster}`;
    }
    let changed = false;
    if (this.record.cluster === "" && identity.cluster !== "") {
      this.record = { ...this.record, cluster: identity.cluster }; // a joining node learns its cluster
      changed = true;
    }
    const known = this.record.peers[peer];
    if (identity.incarnation !== "" && known !== undefined && known !== identity.incarnation) {
      return (
        `peer ${peer}'s data directory was replaced (incarnation ${known}, now ${identity.incarnation}): ` +
        `it may rejoin only as a new member (remove it, then add it back as a learner)`
      );
    }
    if (identity.incarnation !== "" && known === undefined && Object.keys(this.record.peers).length < knownPeersMax) {
      this.record = { ...this.record, peers: { ...this.record.peers, [peer]: identity.incarnation } };
      changed = true;
    }
    if (changed) this.store.save(this.record);
    return null;
  }

  /**
   * A snapshot at `index` with membership `conf` replaced the log: the removals it covers were never
   * applied one by one, so every recorded peer that is not a member any more is forgotten.
   */
  forgetNonMembers(conf: ConfState, index: number): void {
    if (index <= this.record.confIndex) return;
    const members = new Set([...conf.voters, ...conf.learners]);
    const peers = Object.fromEntries(Object.entries(this.record.peers).filter(([id]) => members.has(id)));
    this.record = { ...this.record, peers, confIndex: index };
    this.store.save(this.record);
  }

  /**
   * The membership change at `index` removed `peer` or added it anew: whichever incarnation connects
   * next is accepted. Changes at or below an index already seen are replays (after a restart): ignored.
   */
  forget(peer: NodeId, index: number): void {
    if (index <= this.record.confIndex) return;
    const peers = { ...this.record.peers };
    delete peers[peer];
    this.record = { ...this.record, peers, confIndex: index };
    this.store.save(this.record);
  }
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
