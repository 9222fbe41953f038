// Challenge-response authentication with the shared cluster secret. Each side sends a fresh random
// nonce; each proves knowledge of the secret with HMAC-SHA256 over (role, dialer, acceptor, both
// nonces). The secret never crosses the wire, a proof is bound to this connection's nonces (no
// replay), and the role in the MAC stops a reflected proof being accepted.
//
//   dialer   -> acceptor : hello     { from, to, nonce, cluster, incarnation, ids? }
//   acceptor -> dialer   : challenge { from, nonce, cluster, incarnation, proof: mac("acceptor") }
//   dialer   -> acceptor : proof     { proof: mac("dialer") }        then data frames both ways
//
// Each side also states its identity: the cluster it belongs to, the incarnation of its data
// directory, and what that directory holds (`durable`: its term, vote and last log index). Each side
// checks the other's only once the other is authenticated; a replaced data directory (a wiped
// member) and one older than what its node already told this one (a rolled-back copy) are refused
// (see driver/peer-identity.ts).
//
// Rotation: a node may know a second secret (the previous one, during a roll). The hello lists
// the ids of the dialer's secrets (secretId: a one-way tag, not the secret); the acceptor proves
// with its first secret the dialer knows (else its own first), and the dialer answers with the
// secret that verified. So nodes with {new, old} and nodes with {old} keep talking during a roll,
// and the old secret is dropped once every node has the new one. A hello without ids (an older
// node) is answered with the acceptor's first secret.

import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { NodeId } from "../core/types.js";

export const nonceBytes = 32;
export const proofBytes = 32;
/** Largest handshake frame accepted before authentication (ids are short). */
export const handshakeBytesMax = 1024;
/** Longest node id accepted on the wire. */
export const nodeIdBytesMax = 128;
/** Secrets a node knows at once (the current one and, during a rotation, the previous one). */
export const secretsMax = 2;
export const secretIdBytes = 8;
export const protocolVersion = 1;

/** Longest cluster id or incarnation accepted on the wire. */
export const identityBytesMax = 64;

/**
 * What a node's data directory holds, as far as its peers rely on it: the term and vote of its hard
 * state and the index of its last log entry. A copy restored from earlier can hold less than the
 * node already told its peers (driver/peer-identity.ts compares).
 */
export interface DurableState {
  term: number;
  /** Whom it voted for in `term` ("" = nobody). */
  vote: NodeId;
  lastIndex: number;
}

/**
 * Who a node is beyond its id: `cluster` names the cluster ("" while a joining node has not learned
 * it), `incarnation` its data directory, drawn once when that directory was created ("" = none stated),
 * and `durable` what that directory holds (absent = none stated: a node of an earlier release).
 */
export interface PeerIdentity {
  cluster: string;
  incarnation: string;
  durable?: DurableState;
  /**
   * True while this incarnation waits for every founding peer to accept it and takes no part yet
   * (driver/peer-identity.ts: only then may it replace an incarnation that never took part).
   */
  admitting?: boolean;
}

/** Why a peer's identity is refused; `rolledBack` when its data directory holds less than it already told this node. */
export interface IdentityRefusal {
  reason: string;
  rolledBack: boolean;
  /** The peer states another incarnation than the one this node knows: its data directory was replaced. */
  replaced?: boolean;
}

export const noIdentity: PeerIdentity = { cluster: "", incarnation: "" };

export interface HelloFrame extends PeerIdentity {
  k: "hello";
  v: number;
  from: NodeId;
  to: NodeId;
  nonce: Uint8Array;
  /** secretId of each secret the dialer knows (absent from older nodes). */
  ids?: Uint8Array[];
}

export interface ChallengeFrame extends PeerIdentity {
  k: "challenge";
  from: NodeId;
  nonce: Uint8Array;
  proof: Uint8Array;
}

export interface ProofFrame {
  k: "proof";
  proof: Uint8Array;
}

export type HandshakeFrame = HelloFrame | ChallengeFrame | ProofFrame;

export interface HandshakeInput {
  role: "dialer" | "acceptor";
  dialer: NodeId;
  acceptor: NodeId;
  dialerNonce: Uint8Array;
  acceptorNonce: Uint8Array;
}

export function newNonce(): Uint8Array {
  return new Uint8Array(randomBytes(nonceBytes));
}

/**
 * HMAC-SHA256(secret, "keyraft-raft-v1" | role | dialer | acceptor | nonces), fields length-prefixed.
 * The identities are not in it: a node of the previous release (which states none) must still
 * authenticate during a rolling upgrade, and the connection is not encrypted anyway (whoever can
 * rewrite a hello can rewrite the frames after it; see docs/cluster.md).
 */
export function computeProof(secret: Uint8Array, input: HandshakeInput): Uint8Array {
  const mac = createHmac("sha256", secret);
  for (const field of [`keyraft-raft-v${protocolVersion}`, input.role, input.dialer, input.acceptor]) {
    const bytes = Buffer.from(field, "utf8");
    mac.update(lengthPrefix(bytes.byteLength)).update(bytes);
  }
  mac.update(lengthPrefix(input.dialerNonce.byteLength)).update(input.dialerNonce);
  mac.update(lengthPrefix(input.acceptorNonce.byteLength)).update(input.acceptorNonce);
  return new Uint8Array(mac.digest());
}

/** A public tag of a secret: HMAC-SHA256(secret, "keyraft-secret-id"), first secretIdBytes bytes. */
export function secretId(secret: Uint8Array): Uint8Array {
  return new Uint8Array(createHmac("sha256", secret).update("keyraft-secret-id").digest().subarray(0, secretIdBytes));
}

/** The secret an acceptor proves with: its first one whose id the dialer listed, else its first. */
export function secretFor(secrets: readonly Uint8Array[], ids: readonly Uint8Array[] | undefined): Uint8Array {
  if (ids !== undefined) {
    for (const secret of secrets) {
      const id = secretId(secret);
      if (ids.some((listed) => Buffer.from(listed).equals(id))) return secret;
    }
  }
  return secrets[0]!;
}

export function verifyProof(secret: Uint8Array, input: HandshakeInput, proof: unknown): boolean {
  if (!(proof instanceof Uint8Array) || proof.byteLength !== proofBytes) return false;
  return timingSafeEqual(computeProof(secret, input), proof);
}

/** Narrows an untrusted decoded value to a handshake frame, or null. */
export function parseHandshake(value: unknown): HandshakeFrame | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const frame = value as Record<string, unknown>;
  const kind = frame["k"];
  if (kind === "hello") {
    if (
      frame["v"] !== protocolVersion ||
      !isNodeId(frame["from"]) ||
      !isNodeId(frame["to"]) ||
      !isNonce(frame["nonce"])
    )
      return null;
    const identity = parseIdentity(frame);
    if (identity === null) return null;
    const ids = frame["ids"];
    if (ids !== undefined && !isSecretIds(ids)) return null;
    const hello: HelloFrame = {
      k: "hello",
      v: protocolVersion,
      from: frame["from"],
      to: frame["to"],
      nonce: frame["nonce"],
      ...identity,
    };
    if (ids !== undefined) hello.ids = ids;
    return hello;
  }
  if (kind === "challenge") {
    if (!isNodeId(frame["from"]) || !isNonce(frame["nonce"]) || !(frame["proof"] instanceof Uint8Array)) return null;
    const identity = parseIdentity(frame);
    if (identity === null) return null;
    return { k: "challenge", from: frame["from"], nonce: frame["nonce"], proof: frame["proof"], ...identity };
  }
  if (kind === "proof") {
    if (!(frame["proof"] instanceof Uint8Array)) return null;
    return { k: "proof", proof: frame["proof"] };
  }
  return null;
}

/** Missing fields mean none stated (a peer that predates identities); present ones must be short strings. */
function parseIdentity(frame: Record<string, unknown>): PeerIdentity | null {
  const cluster = frame["cluster"] ?? "";
  const incarnation = frame["incarnation"] ?? "";
  if (typeof cluster !== "string" || typeof incarnation !== "string") return null;
  if (cluster.length > identityBytesMax || incarnation.length > identityBytesMax) return null;
  const admitting = frame["admitting"];
  if (admitting !== undefined && typeof admitting !== "boolean") return null;
  const stated: PeerIdentity = admitting === true ? { cluster, incarnation, admitting } : { cluster, incarnation };
  const durable = frame["durable"];
  if (durable === undefined) return stated;
  if (!isDurableState(durable)) return null;
  return { ...stated, durable: { term: durable.term, vote: durable.vote, lastIndex: durable.lastIndex } };
}

function isDurableState(value: unknown): value is DurableState {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const state = value as Record<string, unknown>;
  const vote = state["vote"];
  return (
    isCount(state["term"]) && isCount(state["lastIndex"]) && typeof vote === "string" && vote.length <= nodeIdBytesMax
  );
}

function isCount(value: unknown): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= 0;
}

function isNodeId(value: unknown): value is NodeId {
  return typeof value === "string" && value.length > 0 && value.length <= nodeIdBytesMax;
}

function isSecretIds(value: unknown): value is Uint8Array[] {
  return (
    Array.isArray(value) &&
    value.length <= secretsMax &&
    value.every((id) => id instanceof Uint8Array && id.byteLength === secretIdBytes)
  );
}

function isNonce(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array && value.byteLength === nonceBytes;
}

function lengthPrefix(length: number): Uint8Array {
  const prefix = new Uint8Array(4);
  new DataView(prefix.buffer).setUint32(0, length);
  return prefix;
}
