// Raft transport over WebSockets (ws) with msgpackr framing. One authenticated connection per
// peer pair: both sides may dial, and when two connections end up open the one dialed by the
// lower node id is kept (both sides apply the same rule, so they agree without talking).
// Outbound messages go to a bounded per-peer queue and are flushed once per event-loop turn,
// many messages per frame. Lost peers are redialed with capped exponential backoff + jitter.

import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { WebSocket, WebSocketServer } from "ws";
import { assert } from "../core/assert.js";
import type { NodeId } from "../core/types.js";
import { silentLogger, type Logger } from "../logger.js";
import { backoffDelayMs } from "./backoff.js";
import { buildFrame, decodeValue, encodeValue, frameMessagesMax } from "./codec.js";
import { Connection, type ConnectionHooks } from "./connection.js";
import {
  handshakeBytesMax,
  noIdentity,
  secretId,
  secretsMax,
  type IdentityRefusal,
  type PeerIdentity,
} from "./handshake.js";
import { setFrameBytesMax } from "./payload-limit.js";
import { SendQueue } from "./send-queue.js";
import { closeCodes, type Addressed, type PeerStats, type Transport, type TransportStats } from "./transport.js";

/** Limits and timings of the transport; every field has a default (see resolveLimits). */
export interface WsTransportLimits {
  /** Largest encoded message; larger ones are dropped and logged. Default 8 MiB. */
  messageBytesMax: number;
  /** Largest frame sent or accepted (ws maxPayload); a peer sending more is disconnected (1009). Default 16 MiB. */
  frameBytesMax: number;
  /** Per-peer send queue bound in messages; the oldest is dropped when full. Default 8192. */
  sendQueueMessagesMax: number;
  /** Per-peer send queue bound in bytes. Default 64 MiB. */
  sendQueueBytesMax: number;
  /** Stop writing to a socket while this many bytes are buffered in it. Default 8 MiB. */
  socketBufferedBytesMax: number;
  /** Peers in the address book. Default 64. */
  peersMax: number;
  /**
   * Accepted connections allowed to be mid-handshake at once. When full, the oldest pending one
   * that has not yet named a known node (else the oldest pending one) is dropped for the newcomer:
   * a real peer's handshake takes one round trip, so strangers, stale dials or idle connections
   * can never lock this node's own peers out. Default 64.
   */
  handshakesPendingMax: number;
  /** Accepted connections mid-handshake from one remote address; more are refused (busy). Default 4. */
  handshakesPendingPerAddressMax: number;
  /** Dialed connections: time to complete the handshake. Default 5000. */
  handshakeTimeoutMs: number;
  /**
   * Accepted connections: time to complete the handshake (TLS, upgrade request, HMAC), else
   * dropped. Default 2000: idle connections do not hold a slot for long (and the oldest is dropped
   * for a newcomer anyway), while a loaded peer still has time for its round trips.
   */
  acceptHandshakeTimeoutMs: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** Keepalive: a connection that does not answer a ping within this interval is dropped. 0 = off. Default 5000. */
  pingIntervalMs: number;
}

export const defaultTransportLimits: WsTransportLimits = {
  messageBytesMax: 8 << 20,
  frameBytesMax: 16 << 20,
  sendQueueMessagesMax: 8192,
  sendQueueBytesMax: 64 << 20,
  socketBufferedBytesMax: 8 << 20,
  peersMax: 64,
  handshakesPendingMax: 64,
  handshakesPendingPerAddressMax: 4,
  handshakeTimeoutMs: 5000,
  acceptHandshakeTimeoutMs: 2000,
  backoffBaseMs: 50,
  backoffMaxMs: 2000,
  pingIntervalMs: 5000,
};

/** Mutual TLS between nodes (PEM): each side presents `cert` and verifies the other's against `ca`. */
export interface TransportTls {
  cert: string | Buffer;
  key: string | Buffer;
  ca: string | Buffer;
}

export interface WsTransportOptions<M extends Addressed> {
  id: NodeId;
  /** The shared cluster secret (at least 16 bytes). Never sent, never logged. */
  secret: Uint8Array | string;
  /**
   * A secret accepted beside `secret` during a rotation (handshake.ts): nodes that know only it
   * still connect. Never sent, never logged.
   */
  previousSecret?: Uint8Array | string;
  /** TLS for every connection (wss://, the peers' addresses are dialed over TLS); absent: plain ws. */
  tls?: TransportTls;
  /** Interface to listen on. Default "127.0.0.1". */
  host?: string;
  /** Port to listen on; 0 picks a free one. Default 0. */
  port?: number;
  /** Address book: peer id -> "ws://host:port" (an entry for this node itself is ignored). Only these ids may connect. */
  peers?: Record<NodeId, string>;
  /** A message from an authenticated peer, with the incarnation that peer stated ("" = none). */
  onMessage: (message: M, incarnation: string) => void;
  /** Called when the authenticated connection to a peer opens or closes (for reportUnreachable). */
  onPeerChange?: (id: NodeId, connected: boolean) => void;
  logger?: Logger;
  limits?: Partial<WsTransportLimits>;
  /** This node's identity, stated in every handshake. Default: none (no identity checks). */
  identity?: () => PeerIdentity;
  /** Checks an authenticated peer's identity: null to accept, else why it is refused. Default: accept. */
  checkIdentity?: (peer: NodeId, identity: PeerIdentity) => IdentityRefusal | null;
  /**
   * A peer refused this node over an identity check: this node's data directory may have been
   * replaced, or (`rolledBack`) restored from an older copy of itself.
   */
  onIdentityRefused?: (peer: NodeId, rolledBack: boolean) => void;
}

interface Peer {
  id: NodeId;
  url: string;
  active: Connection | null;
  dialing: Connection | null;
  attempt: number;
  redialTimer: NodeJS.Timeout | null;
  queue: SendQueue;
  /** The incarnation of the peer's last authenticated connection ("" none yet, or none stated). */
  incarnation: string;
  stats: Omit<PeerStats, "connected" | "queuedMessages" | "droppedQueueFull">;
}

export class WsTransport<M extends Addressed> implements Transport<M> {
  private readonly limits: WsTransportLimits;
  private readonly secrets: Uint8Array[];
  private readonly logger: Logger;
  private readonly peers = new Map<NodeId, Peer>();
  private readonly hooks: ConnectionHooks;
  private server: WebSocketServer | null = null;
  private httpServer: HttpServer | null = null;
  /** Accepted connections not yet authenticated, oldest first. */
  private readonly inbound = new Set<Connection>();
  private readonly pendingByAddress = new Map<string, number>();
  private flushScheduled = false;
  private flushRetry: NodeJS.Timeout | null = null;
  private pingTimer: NodeJS.Timeout | null = null;
  private closing = false;
  private readonly counters = {
    refusedConnections: 0,
    authFailures: 0,
    identityRefusals: 0,
    rollbackRefusals: 0,
    invalidMessages: 0,
    droppedUnknownPeer: 0,
  };

  constructor(private readonly options: WsTransportOptions<M>) {
    this.limits = { ...defaultTransportLimits, ...options.limits };
    assert(
      this.limits.frameBytesMax >= this.limits.messageBytesMax + 3,
      "transport: frameBytesMax must hold one message",
    );
    assert(
      this.limits.sendQueueBytesMax >= this.limits.messageBytesMax,
      "transport: sendQueueBytesMax must hold one message",
    );
    const bytes = (secret: Uint8Array | string) =>
      typeof secret === "string" ? new TextEncoder().encode(secret) : secret;
    this.secrets = [bytes(options.secret)];
    if (options.previousSecret !== undefined) this.secrets.push(bytes(options.previousSecret));
    assert(this.secrets.length <= secretsMax, "transport: at most secretsMax secrets");
    for (const secret of this.secrets)
      assert(secret.byteLength >= 16, "transport: the cluster secret must be at least 16 bytes");
    this.logger = options.logger ?? silentLogger;
    // The address book may list every member, this node included (one config for the whole cluster).
    for (const [id, url] of Object.entries(options.peers ?? {})) if (id !== options.id) this.addPeer(id, url);
    this.hooks = this.makeHooks();
  }

  async start(): Promise<{ port: number }> {
    assert(this.server === null, "transport: already started");
    // The upgrade request (and, with TLS, the TLS handshake) must also arrive within the accept
    // deadline: a slow client cannot hold a socket before the transport even sees it.
    const serverOptions = {
      headersTimeout: this.limits.acceptHandshakeTimeoutMs,
      requestTimeout: this.limits.acceptHandshakeTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, this.limits.acceptHandshakeTimeoutMs),
    };
    const tls = this.options.tls;
    const httpServer =
      tls === undefined
        ? createHttpServer(serverOptions)
        : createHttpsServer({
            ...serverOptions,
            cert: tls.cert,
            key: tls.key,
            ca: tls.ca,
            requestCert: true,
            rejectUnauthorized: true,
            handshakeTimeout: this.limits.acceptHandshakeTimeoutMs,
          });
    this.httpServer = httpServer;
    // Only WebSocket upgrades are served; anything else is answered at once and closed.
    httpServer.on("request", (_request, response) => response.writeHead(426, { connection: "close" }).end());
    httpServer.on("tlsClientError", (error) =>
      this.logger.debug({ err: error.message }, "raft transport: TLS handshake refused"),
    );
    const server = new WebSocketServer({
      server: httpServer,
      // Before authentication only handshake frames are valid: ws refuses a larger frame from its
      // header (1009), before buffering it. Raised to frameBytesMax once the peer is authenticated.
      maxPayload: handshakeBytesMax,
      perMessageDeflate: false,
    });
    this.server = server;
    server.on("connection", (socket, request) => this.accept(socket, request.socket.remoteAddress ?? "?"));
    await new Promise<void>((resolve, reject) => {
      httpServer.once("listening", resolve);
      httpServer.once("error", reject);
      httpServer.listen(this.options.port ?? 0, this.options.host ?? "127.0.0.1");
    });
    server.on("error", (error) => this.logger.error({ err: error.message }, "raft transport: server error"));
    if (this.limits.pingIntervalMs > 0)
      this.pingTimer = setInterval(() => this.keepalive(), this.limits.pingIntervalMs);
    for (const peer of this.peers.values()) this.maybeDial(peer);
    const address = httpServer.address();
    assert(typeof address === "object" && address !== null, "transport: server has no address");
    this.logger.info({ id: this.options.id, port: address.port }, "raft transport: listening");
    return { port: address.port };
  }

  send(messages: readonly M[]): number {
    if (this.closing) return 0;
    let queued = 0;
    for (const message of messages) {
      assert(message.from === this.options.id, `transport: sending a message from ${message.from}`);
      const peer = this.peers.get(message.to);
      if (peer === undefined) {
        this.counters.droppedUnknownPeer++;
        continue;
      }
      const encoded = encodeValue(message);
      if (encoded.byteLength > this.limits.messageBytesMax) {
        peer.stats.droppedOversize++;
        this.logger.warn(
          { peer: peer.id, type: message.type, bytes: encoded.byteLength, max: this.limits.messageBytesMax },
          "raft transport: message too large, dropped",
        );
        continue;
      }
      peer.queue.push(encoded);
      queued++;
      if (peer.active === null) this.maybeDial(peer);
    }
    this.scheduleFlush();
    return queued;
  }

  /**
   * Writes what is queued now instead of at the end of this event-loop turn. The driver calls it
   * before work that would otherwise delay the frames (building and syncing a disk write): a
   * leader's appends should be on the wire while it writes. Otherwise batching per turn is better.
   */
  flushNow(): void {
    if (!this.closing) this.flush();
  }

  addPeer(id: NodeId, url: string): void {
    assert(id !== this.options.id, "transport: a node is not its own peer");
    const existing = this.peers.get(id);
    if (existing !== undefined) {
      existing.url = url;
      return;
    }
    assert(this.peers.size < this.limits.peersMax, "transport: peersMax reached");
    const queue = new SendQueue(this.limits.sendQueueMessagesMax, this.limits.sendQueueBytesMax);
    const stats = {
      sentMessages: 0,
      sentFrames: 0,
      receivedMessages: 0,
      droppedOversize: 0,
      connects: 0,
      dialFailures: 0,
    };
    const peer: Peer = {
      id,
      url,
      active: null,
      dialing: null,
      attempt: 0,
      redialTimer: null,
      queue,
      incarnation: "",
      stats,
    };
    this.peers.set(id, peer);
    if (this.server !== null) this.maybeDial(peer);
  }

  removePeer(id: NodeId): void {
    const peer = this.peers.get(id);
    if (peer === undefined) return;
    this.peers.delete(id);
    if (peer.redialTimer !== null) clearTimeout(peer.redialTimer);
    peer.active?.close(closeCodes.peerRemoved, "peer removed");
    peer.dialing?.close(closeCodes.peerRemoved, "peer removed");
    peer.queue.clear();
  }

  isConnected(id: NodeId): boolean {
    return this.peers.get(id)?.active?.isOpen ?? false;
  }

  stats(): TransportStats {
    const peers: Record<NodeId, PeerStats> = {};
    for (const peer of this.peers.values()) {
      peers[peer.id] = {
        ...peer.stats,
        connected: this.isConnected(peer.id),
        queuedMessages: peer.queue.length,
        droppedQueueFull: peer.queue.dropped,
      };
    }
    return { peers, ...this.counters };
  }

  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.pingTimer !== null) clearInterval(this.pingTimer);
    if (this.flushRetry !== null) clearTimeout(this.flushRetry);
    const sockets: WebSocket[] = [];
    for (const peer of this.peers.values()) {
      if (peer.redialTimer !== null) clearTimeout(peer.redialTimer);
      peer.queue.clear();
      for (const connection of [peer.active, peer.dialing]) if (connection !== null) sockets.push(connection.socket);
    }
    for (const connection of this.inbound) sockets.push(connection.socket);
    await Promise.all(sockets.map((socket) => closeSocket(socket)));
    const server = this.server;
    if (server !== null) await new Promise<void>((resolve) => server.close(() => resolve()));
    const httpServer = this.httpServer;
    if (httpServer !== null) {
      httpServer.closeAllConnections();
      await new Promise<void>((resolve) => httpServer.close(() => resolve()));
    }
  }

  private makeHooks(): ConnectionHooks {
    return {
      selfId: this.options.id,
      secrets: this.secrets,
      secretIds: this.secrets.map(secretId),
      logger: this.logger,
      handshakeTimeoutMs: this.limits.handshakeTimeoutMs,
      identity: () => this.options.identity?.() ?? noIdentity,
      acceptHandshakeTimeoutMs: this.limits.acceptHandshakeTimeoutMs,
      isKnownPeer: (id) => this.peers.has(id),
      checkIdentity: (peer, identity) => this.options.checkIdentity?.(peer, identity) ?? null,
      onAuthenticated: (connection) => this.adopt(connection),
      onData: (connection, frame) => this.receive(connection, frame),
      onClosed: (connection, code) => this.onConnectionClosed(connection, code),
      onRefused: (_connection, code, authFailure) => {
        this.counters.refusedConnections++;
        if (authFailure) this.counters.authFailures++;
        if (code === closeCodes.identityRefused) this.counters.identityRefusals++;
        if (code === closeCodes.rolledBackRefused) this.counters.rollbackRefusals++;
      },
    };
  }

  private accept(socket: WebSocket, remoteAddress: string): void {
    const fromAddress = this.pendingByAddress.get(remoteAddress) ?? 0;
    if (this.closing || fromAddress >= this.limits.handshakesPendingPerAddressMax) {
      this.counters.refusedConnections++;
      this.logger.warn(
        { remoteAddress, pending: fromAddress },
        "raft transport: too many pending handshakes from this address, refused",
      );
      // A refused socket still reads until the close completes, and ws reports a bad or oversized
      // frame as an "error" event: without a listener that is thrown out of the event loop.
      socket.on("error", (error) =>
        this.logger.debug({ remoteAddress, err: error.message }, "raft transport: refused socket error"),
      );
      socket.close(this.closing ? closeCodes.shuttingDown : closeCodes.busy, "busy");
      // Nor does it wait the 30 s ws gives a peer to answer the close: it holds no pending slot.
      setTimeout(() => socket.terminate(), refusedCloseWaitMs).unref();
      return;
    }
    if (this.inbound.size >= this.limits.handshakesPendingMax) {
      // Full: the oldest pending connection that has not named a known node makes room (else the
      // oldest pending one): a peer completes its handshake in one round trip, and a connection
      // idling in a slot must not keep it out.
      let oldest: Connection | undefined;
      for (const pending of this.inbound) {
        if (!pending.identified) {
          oldest = pending;
          break;
        }
      }
      oldest ??= this.inbound.values().next().value!;
      this.counters.refusedConnections++;
      this.logger.warn(
        { remoteAddress: oldest.remoteAddress, pending: this.inbound.size },
        "raft transport: too many pending handshakes, dropped the oldest",
      );
      this.forgetPending(oldest);
      oldest.close(closeCodes.busy, "busy");
    }
    this.pendingByAddress.set(remoteAddress, fromAddress + 1);
    const connection = new Connection(socket, "acceptor", this.hooks, remoteAddress);
    this.inbound.add(connection);
    assert(this.inbound.size <= this.limits.handshakesPendingMax, "transport: pending handshakes within bound");
  }

  /** Removes an accepted connection from the pending handshakes (authenticated or closed); false if it was not pending. */
  private forgetPending(connection: Connection): boolean {
    if (!this.inbound.delete(connection)) return false;
    const count = this.pendingByAddress.get(connection.remoteAddress) ?? 0;
    assert(count >= 1, "transport: a pending connection is counted under its address");
    if (count === 1) this.pendingByAddress.delete(connection.remoteAddress);
    else this.pendingByAddress.set(connection.remoteAddress, count - 1);
    return true;
  }

  private maybeDial(peer: Peer): void {
    if (
      this.closing ||
      this.server === null ||
      peer.active !== null ||
      peer.dialing !== null ||
      peer.redialTimer !== null
    )
      return;
    const tls = this.options.tls;
    // With TLS every peer is dialed over wss:// (the address book keeps ws:// addresses).
    const url = tls === undefined ? peer.url : peer.url.replace(/^ws:\/\//, "wss://");
    const socket = new WebSocket(url, {
      ...(tls === undefined ? {} : { cert: tls.cert, key: tls.key, ca: tls.ca }),
      maxPayload: this.limits.frameBytesMax,
      perMessageDeflate: false,
      handshakeTimeout: this.limits.handshakeTimeoutMs,
      // Client masking defends browsers' intermediaries against cache poisoning; between two raft
      // nodes it only costs a pass over every byte. A zero mask makes ws skip it.
      generateMask: (mask: Buffer) => void mask.fill(0),
    });
    peer.dialing = new Connection(socket, "dialer", this.hooks, peer.url, peer.id);
  }

  private scheduleRedial(peer: Peer): void {
    if (
      this.closing ||
      peer.active !== null ||
      peer.dialing !== null ||
      peer.redialTimer !== null ||
      this.peers.get(peer.id) !== peer
    )
      return;
    const delayMs = backoffDelayMs(
      { baseMs: this.limits.backoffBaseMs, maxMs: this.limits.backoffMaxMs },
      peer.attempt,
      Math.random(),
    );
    peer.attempt++;
    peer.redialTimer = setTimeout(() => {
      peer.redialTimer = null;
      this.maybeDial(peer);
    }, delayMs);
  }

  /** Keeps one connection per peer: the one dialed by the lower id; between equals, the newer. */
  private adopt(connection: Connection): void {
    if (connection.role === "acceptor") {
      this.forgetPending(connection);
      setFrameBytesMax(connection.socket, this.limits.frameBytesMax);
    }
    const peer = this.peers.get(connection.peerId);
    if (peer === undefined || this.closing) return connection.close(closeCodes.peerRemoved, "peer removed");
    if (peer.dialing === connection) peer.dialing = null;
    const current = peer.active;
    if (current !== null && current !== connection) {
      if (this.rank(connection) < this.rank(current))
        return connection.close(closeCodes.duplicate, "duplicate connection");
      peer.active = null; // so that closing the replaced one does not trigger a redial
      current.close(closeCodes.duplicate, "duplicate connection");
    }
    const incarnation = connection.remoteIdentity.incarnation;
    if (incarnation !== "" && peer.incarnation !== "" && incarnation !== peer.incarnation) {
      // A new process on a new data directory: what was queued for the old one (heartbeats with its
      // commit index, chunks of its snapshot) must not reach it.
      peer.queue.clear();
    }
    if (incarnation !== "") peer.incarnation = incarnation;
    peer.active = connection;
    peer.attempt = 0;
    peer.stats.connects++;
    if (peer.redialTimer !== null) clearTimeout(peer.redialTimer);
    peer.redialTimer = null;
    this.logger.info({ peer: peer.id, role: connection.role }, "raft transport: peer connected");
    this.options.onPeerChange?.(peer.id, true);
    this.scheduleFlush();
  }

  private rank(connection: Connection): number {
    const lowerId = connection.peerId < this.options.id ? connection.peerId : this.options.id;
    return connection.dialerId === lowerId ? 1 : 0;
  }

  private onConnectionClosed(connection: Connection, code: number): void {
    this.forgetPending(connection);
    const refusedIdentity = code === closeCodes.identityRefused || code === closeCodes.rolledBackRefused;
    if (refusedIdentity && !connection.refusedLocally && connection.peerId !== "") {
      if (code === closeCodes.rolledBackRefused) this.counters.rollbackRefusals++;
      else this.counters.identityRefusals++;
      this.options.onIdentityRefused?.(connection.peerId, code === closeCodes.rolledBackRefused);
    }
    const peer = this.peers.get(connection.peerId);
    if (peer === undefined) return;
    if (peer.dialing === connection) {
      peer.dialing = null;
      peer.stats.dialFailures++;
      this.scheduleRedial(peer);
    } else if (peer.active === connection) {
      peer.active = null;
      this.logger.info({ peer: peer.id, code }, "raft transport: peer disconnected");
      this.options.onPeerChange?.(peer.id, false);
      this.scheduleRedial(peer);
    }
  }

  private receive(connection: Connection, frame: Uint8Array): void {
    const peer = this.peers.get(connection.peerId);
    // A duplicate being closed may still deliver frames sent before the close: they are authenticated, keep them.
    if (peer === undefined) return;
    let decoded: unknown;
    try {
      decoded = decodeValue(frame);
    } catch {
      this.counters.invalidMessages++;
      return connection.close(closeCodes.protocolError, "undecodable frame");
    }
    if (!Array.isArray(decoded) || decoded.length > frameMessagesMax) {
      this.counters.invalidMessages++;
      return connection.close(closeCodes.protocolError, "a data frame must be an array of messages");
    }
    for (const item of decoded as unknown[]) {
      if (!this.isValidMessage(item, peer.id)) {
        this.counters.invalidMessages++;
        this.logger.warn({ peer: peer.id }, "raft transport: dropped a malformed or misaddressed message");
        continue;
      }
      peer.stats.receivedMessages++;
      this.options.onMessage(item, connection.remoteIdentity.incarnation);
      if (this.closing) return;
    }
  }

  /** `from` must be the authenticated peer: a peer cannot speak for another node. */
  private isValidMessage(item: unknown, peerId: NodeId): item is M {
    if (typeof item !== "object" || item === null || Array.isArray(item)) return false;
    const message = item as Record<string, unknown>;
    return (
      typeof message["type"] === "string" &&
      message["from"] === peerId &&
      message["to"] === this.options.id &&
      typeof message["term"] === "number"
    );
  }

  private scheduleFlush(): void {
    if (this.flushScheduled || this.closing) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    let blocked = false;
    for (const peer of this.peers.values()) {
      const connection = peer.active;
      if (connection === null || !connection.isOpen) continue;
      while (peer.queue.length > 0) {
        if (connection.socket.bufferedAmount > this.limits.socketBufferedBytesMax) {
          blocked = true;
          break;
        }
        const { encoded, bytes } = peer.queue.takeFrame(this.limits.frameBytesMax);
        connection.send(buildFrame(encoded, bytes));
        peer.stats.sentFrames++;
        peer.stats.sentMessages += encoded.length;
      }
    }
    if (blocked && this.flushRetry === null && !this.closing) {
      this.flushRetry = setTimeout(() => {
        this.flushRetry = null;
        this.flush();
      }, 5);
    }
  }

  private keepalive(): void {
    for (const peer of this.peers.values()) {
      const connection = peer.active;
      if (connection === null || !connection.isOpen) continue;
      if (!connection.alive) {
        this.logger.warn(
          { peer: peer.id },
          "raft transport: no pong within the ping interval, dropping the connection",
        );
        connection.socket.terminate();
        continue;
      }
      connection.alive = false;
      connection.socket.ping();
    }
  }
}

const closeGraceMs = 250;
/** How long a socket refused at accept may take to answer its close frame before it is dropped. */
const refusedCloseWaitMs = 1_000;

function closeSocket(socket: WebSocket): Promise<void> {
  if (socket.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      socket.terminate();
      resolve();
    }, closeGraceMs);
    socket.once("close", () => {
      clearTimeout(timer);
      resolve();
    });
    if (socket.readyState === WebSocket.CONNECTING) socket.terminate();
    else socket.close(closeCodes.shuttingDown, "shutting down");
  });
}
