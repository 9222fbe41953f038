// One WebSocket between two nodes: runs the challenge-response handshake (either role), then
// hands data frames to the transport. Anything unexpected before authentication closes the
// socket with a code; the transport decides what to do with authenticated connections.

import type WebSocket from "ws";
import { assert } from "../core/assert.js";
import type { NodeId } from "../core/types.js";
import type { Logger } from "../logger.js";
import { decodeValue, encodeValue } from "./codec.js";
import {
  computeProof,
  handshakeBytesMax,
  newNonce,
  noIdentity,
  parseHandshake,
  protocolVersion,
  secretFor,
  verifyProof,
  type HandshakeInput,
  type IdentityRefusal,
  type PeerIdentity,
} from "./handshake.js";
import { closeCodes } from "./transport.js";

export interface ConnectionHooks {
  readonly selfId: NodeId;
  /** The cluster secrets this node knows, the current one first (handshake.ts: rotation). */
  readonly secrets: readonly Uint8Array[];
  /** secretId of each of `secrets`, sent in the hello. */
  readonly secretIds: readonly Uint8Array[];
  readonly logger: Logger;
  readonly handshakeTimeoutMs: number;
  /** This node's identity, stated in the handshake (a joining node learns its cluster, so it is asked each time). */
  identity(): PeerIdentity;
  /** Handshake deadline of an accepted (not yet authenticated) connection: short, as it costs a slot. */
  readonly acceptHandshakeTimeoutMs: number;
  isKnownPeer(id: NodeId): boolean;
  /** Checks an authenticated peer's identity: null to accept, else why it is refused. */
  checkIdentity(peer: NodeId, identity: PeerIdentity): IdentityRefusal | null;
  onAuthenticated(connection: Connection): void;
  onData(connection: Connection, frame: Uint8Array): void;
  onClosed(connection: Connection, code: number): void;
  onRefused(connection: Connection, code: number, authFailure: boolean): void;
}

type Step = "awaitHello" | "awaitProof" | "awaitChallenge" | "open" | "closed";

export class Connection {
  /** The remote node: known up front when dialing, learned from `hello` when accepting. */
  peerId: NodeId;
  /** Set by the transport's keepalive: cleared on ping, set again on pong. */
  alive = true;
  /** This side refused the connection (so a close code names our reason, not the peer's). */
  refusedLocally = false;
  /** Accepting side: the peer's hello named a known node (the handshake limit spares it; see WsTransport.accept). */
  identified = false;
  private step: Step;
  private readonly ownNonce = newNonce();
  private peerNonce: Uint8Array = new Uint8Array(0);
  private peerIdentity: PeerIdentity = noIdentity;
  /** The identity this side stated (fixed at its first handshake frame). */
  private stated: PeerIdentity | null = null;
  /** The secret both sides use on this connection (chosen by the acceptor, found by the dialer). */
  private secret: Uint8Array;
  private handshakeTimer: NodeJS.Timeout | null;

  constructor(
    readonly socket: WebSocket,
    readonly role: "dialer" | "acceptor",
    private readonly hooks: ConnectionHooks,
    readonly remoteAddress: string,
    expectedPeer: NodeId = "",
  ) {
    assert(role === "acceptor" || expectedPeer !== "", "connection: a dialer must know whom it dials");
    this.peerId = expectedPeer;
    this.secret = hooks.secrets[0]!;
    this.step = role === "dialer" ? "awaitChallenge" : "awaitHello";
    this.handshakeTimer = setTimeout(
      () => this.refuse(closeCodes.handshakeTimeout, "handshake timeout", false),
      role === "acceptor" ? hooks.acceptHandshakeTimeoutMs : hooks.handshakeTimeoutMs,
    );
    socket.on("message", (data, isBinary) => this.onFrame(data, isBinary));
    socket.on("close", (code) => this.onClose(code));
    socket.on("error", (error) =>
      hooks.logger.debug({ peer: this.peerId, remoteAddress, err: error.message }, "raft transport: socket error"),
    );
    socket.on("pong", () => void (this.alive = true));
    if (role === "dialer") socket.on("open", () => this.sendHello());
  }

  get isOpen(): boolean {
    return this.step === "open";
  }

  /** The node that opened this connection; the transport keeps the one dialed by the lower id. */
  get dialerId(): NodeId {
    return this.role === "dialer" ? this.hooks.selfId : this.peerId;
  }

  send(frame: Uint8Array): void {
    assert(this.step === "open", "connection: send before authentication");
    this.socket.send(frame, { binary: true });
  }

  close(code: number, reason: string): void {
    this.clearHandshakeTimer();
    if (this.step !== "closed") this.socket.close(code, closeReason(reason));
  }

  private sendHello(): void {
    this.socket.send(
      encodeValue({
        k: "hello",
        v: protocolVersion,
        from: this.hooks.selfId,
        to: this.peerId,
        nonce: this.ownNonce,
        ...this.ownIdentity,
        ids: this.hooks.secretIds,
      }),
    );
  }

  private onFrame(data: WebSocket.RawData, isBinary: boolean): void {
    if (this.step === "closed") return;
    const frame = toBytes(data);
    if (this.step === "open") {
      if (!isBinary) return this.refuse(closeCodes.protocolError, "text frame", false);
      this.hooks.onData(this, frame);
      return;
    }
    if (!isBinary || frame.byteLength > handshakeBytesMax)
      return this.refuse(closeCodes.protocolError, "bad handshake frame", false);
    let value: unknown;
    try {
      value = decodeValue(frame);
    } catch {
      return this.refuse(closeCodes.protocolError, "undecodable handshake frame", false);
    }
    this.onHandshake(value);
  }

  private onHandshake(value: unknown): void {
    const frame = parseHandshake(value);
    if (frame === null) return this.refuse(closeCodes.protocolError, "malformed handshake frame", false);
    if (this.step === "awaitHello" && frame.k === "hello") {
      if (frame.to !== this.hooks.selfId)
        return this.refuse(closeCodes.unknownNode, `hello addressed to ${frame.to}`, false);
      this.peerId = frame.from;
      if (!this.hooks.isKnownPeer(frame.from)) return this.refuse(closeCodes.unknownNode, "unknown node id", false);
      this.identified = true;
      this.peerNonce = frame.nonce;
      this.peerIdentity = statedIdentity(frame);
      this.secret = secretFor(this.hooks.secrets, frame.ids);
      const proof = computeProof(this.secret, this.proofInput("acceptor"));
      this.socket.send(
        encodeValue({ k: "challenge", from: this.hooks.selfId, nonce: this.ownNonce, proof, ...this.ownIdentity }),
      );
      this.step = "awaitProof";
      return;
    }
    if (this.step === "awaitChallenge" && frame.k === "challenge") {
      if (frame.from !== this.peerId)
        return this.refuse(closeCodes.unknownNode, `expected ${this.peerId}, reached ${frame.from}`, false);
      this.peerNonce = frame.nonce;
      this.peerIdentity = statedIdentity(frame);
      const input = this.proofInput("acceptor");
      const shared = this.hooks.secrets.find((secret) => verifyProof(secret, input, frame.proof));
      if (shared === undefined) {
        return this.refuse(closeCodes.authFailed, "peer failed the challenge (wrong cluster secret?)", true);
      }
      this.secret = shared;
      const refusal = this.hooks.checkIdentity(this.peerId, this.peerIdentity);
      if (refusal !== null) return this.refuseIdentity(refusal);
      this.socket.send(encodeValue({ k: "proof", proof: computeProof(this.secret, this.proofInput("dialer")) }));
      return this.authenticated();
    }
    if (this.step === "awaitProof" && frame.k === "proof") {
      if (!verifyProof(this.secret, this.proofInput("dialer"), frame.proof)) {
        return this.refuse(closeCodes.authFailed, "peer failed the challenge (wrong cluster secret?)", true);
      }
      // Checked only now: an unauthenticated stranger must not be able to teach us an identity.
      const refusal = this.hooks.checkIdentity(this.peerId, this.peerIdentity);
      if (refusal !== null) return this.refuseIdentity(refusal);
      return this.authenticated();
    }
    this.refuse(closeCodes.protocolError, `unexpected ${frame.k} frame`, false);
  }

  private proofInput(role: "dialer" | "acceptor"): HandshakeInput {
    const dialerNonce = this.role === "dialer" ? this.ownNonce : this.peerNonce;
    const acceptorNonce = this.role === "dialer" ? this.peerNonce : this.ownNonce;
    const dialer = this.dialerId;
    const acceptor = this.role === "dialer" ? this.peerId : this.hooks.selfId;
    return { role, dialer, acceptor, dialerNonce, acceptorNonce };
  }

  /** The identity the peer stated in the handshake (none before it, or for a peer that states none). */
  get remoteIdentity(): PeerIdentity {
    return this.peerIdentity;
  }

  private get ownIdentity(): PeerIdentity {
    this.stated ??= this.hooks.identity();
    return this.stated;
  }

  private authenticated(): void {
    this.clearHandshakeTimer();
    this.step = "open";
    this.hooks.onAuthenticated(this);
  }

  private refuseIdentity(refusal: IdentityRefusal): void {
    this.refuse(refusal.rolledBack ? closeCodes.rolledBackRefused : closeCodes.identityRefused, refusal.reason, false);
  }

  private refuse(code: number, reason: string, authFailure: boolean): void {
    if (this.step === "closed") return;
    this.refusedLocally = true;
    this.hooks.logger.warn(
      { peer: this.peerId, remoteAddress: this.remoteAddress, role: this.role, code, reason },
      "raft transport: connection refused",
    );
    this.hooks.onRefused(this, code, authFailure);
    this.close(code, reason);
    this.step = "closed";
  }

  private onClose(code: number): void {
    this.clearHandshakeTimer();
    const wasClosed = this.step === "closed";
    this.step = "closed";
    this.hooks.onClosed(this, code);
    if (!wasClosed)
      this.hooks.logger.debug({ peer: this.peerId, role: this.role, code }, "raft transport: connection closed");
  }

  private clearHandshakeTimer(): void {
    if (this.handshakeTimer !== null) clearTimeout(this.handshakeTimer);
    this.handshakeTimer = null;
  }
}

/** The identity a hello or challenge states (durable state only when stated). */
function statedIdentity(frame: PeerIdentity): PeerIdentity {
  const identity: PeerIdentity = { cluster: frame.cluster, incarnation: frame.incarnation };
  if (frame.durable !== undefined) identity.durable = frame.durable;
  return identity;
}

/** A WebSocket close reason holds at most 123 bytes; the full reason is logged by refuse(). */
const closeReasonBytesMax = 123;

function closeReason(reason: string): string {
  const bytes = Buffer.from(reason, "utf8");
  if (bytes.byteLength <= closeReasonBytesMax) return reason;
  return bytes.subarray(0, closeReasonBytesMax - 3).toString("utf8");
}

function toBytes(data: WebSocket.RawData): Uint8Array {
  if (Array.isArray(data)) return Buffer.concat(data);
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  return data;
}
