// A TCP proxy for every ordered pair of nodes: node a reaches node b's Raft port through the
// listener of link (a -> b), so links can be cut and healed one by one. A cut destroys the
// link's open connections (both directions) and refuses new ones until it is healed.
//
// A node added at run time (cluster.addNode) is reached by every member at ONE address, the one
// its addition replicated. For it the proxy opens an inbound listener per target that learns each
// connection's source from the Raft handshake (the dialer's hello names it, see
// packages/raft/src/transport/handshake.ts) and then applies that source's link state, so cuts and
// partitions still hold for a node added back.
import { createServer, connect, type Server, type Socket } from "node:net";

/** Connections held open per link (a Raft pair needs a couple; more is a leak). */
export const connectionsPerLinkMax = 64;

/** Bytes of a connection read while looking for its hello (the upgrade request and the hello are a few hundred). */
export const helloScanBytesMax = 4096;

interface Link {
  /** The source node; "*" for an inbound listener that learns it from each connection's hello. */
  from: string;
  to: string;
  server: Server;
  port: number;
  targetPort: number;
  sockets: Set<Socket>;
  /** Bytes forwarded, both ways (to see that traffic flows). */
  bytes: number;
}

function linkName(from: string, to: string): string {
  return `${from}->${to}`;
}

export class LinkProxy {
  private readonly links = new Map<string, Link>();
  private readonly cut = new Set<string>();
  /** Inbound listeners' connections whose source is known: socket -> [source, target]. */
  private readonly identified = new Map<Socket, readonly [string, string]>();
  /** Connections through inbound listeners: identified by their hello, dropped unidentified. */
  readonly inboundCounts = { identified: 0, unidentified: 0 };

  private constructor(
    private readonly host: string,
    /** The node ids, to recognize a hello's source (nodes added at run time join it). */
    private readonly nodes: Set<string>,
  ) {}

  /** Starts one listener per ordered pair of `targets` (node id -> its real Raft port). */
  static async start(targets: ReadonlyMap<string, number>, host = "127.0.0.1"): Promise<LinkProxy> {
    const proxy = new LinkProxy(host, new Set(targets.keys()));
    for (const from of targets.keys()) {
      for (const [to, targetPort] of targets) {
        if (from !== to) await proxy.open(from, to, targetPort);
      }
    }
    return proxy;
  }

  private async open(from: string, to: string, targetPort: number): Promise<void> {
    const sockets = new Set<Socket>();
    const server = createServer((client) => this.accept(link, client));
    const link: Link = { from, to, server, port: 0, targetPort, sockets, bytes: 0 };
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, this.host, () => resolve());
    });
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("proxy: no port");
    link.port = address.port;
    this.links.set(linkName(from, to), link);
  }

  private accept(link: Link, client: Socket): void {
    if (link.from === "*") {
      this.acceptInbound(link, client);
      return;
    }
    if (this.isCut(link.from, link.to) || link.sockets.size >= connectionsPerLinkMax) {
      client.destroy();
      return;
    }
    const upstream = connect(link.targetPort, this.host);
    link.sockets.add(client);
    link.sockets.add(upstream);
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      link.sockets.delete(client);
      link.sockets.delete(upstream);
    };
    this.pipe(link, client, upstream, drop);
  }

  /**
   * Forwards both ways with backpressure, counting the bytes on the link, and drops both sockets
   * when either fails or closes. `admit` sees each chunk from the client first; false: not forwarded.
   */
  private pipe(
    link: Link,
    client: Socket,
    upstream: Socket,
    drop: () => void,
    admit: (chunk: Buffer) => boolean = () => true,
  ): void {
    client.on("data", (chunk: Buffer) => {
      if (!admit(chunk)) return;
      link.bytes += chunk.length;
      if (!upstream.write(chunk)) client.pause();
    });
    upstream.on("data", (chunk: Buffer) => {
      link.bytes += chunk.length;
      if (!client.write(chunk)) upstream.pause();
    });
    upstream.on("drain", () => client.resume());
    client.on("drain", () => upstream.resume());
    for (const s of [client, upstream]) {
      s.on("error", drop);
      s.on("close", drop);
    }
  }

  /**
   * A connection to an inbound listener: forwarded at once (the WebSocket upgrade needs its
   * answer before the hello is sent), its source read from the first hello; from then on it is
   * that link's connection (refused when the link is cut, destroyed when it is cut later). The
   * hello's chunk is checked before it is forwarded, so a cut link carries no frame.
   */
  private acceptInbound(link: Link, client: Socket): void {
    if (link.sockets.size >= connectionsPerLinkMax) {
      client.destroy();
      return;
    }
    const upstream = connect(link.targetPort, this.host);
    link.sockets.add(client);
    link.sockets.add(upstream);
    let scanned = Buffer.alloc(0);
    let source: string | null = null;
    const drop = (): void => {
      client.destroy();
      upstream.destroy();
      link.sockets.delete(client);
      link.sockets.delete(upstream);
      this.identified.delete(client);
    };
    this.pipe(link, client, upstream, drop, (chunk) => {
      if (source !== null) return true;
      scanned = Buffer.concat([scanned, chunk]);
      source = helloSource(scanned, this.nodes);
      if (source === null && scanned.length > helloScanBytesMax) {
        this.inboundCounts.unidentified++;
        drop();
        return false;
      }
      if (source !== null) {
        this.inboundCounts.identified++;
        if (this.isCut(source, link.to)) {
          drop();
          return false;
        }
        this.identified.set(client, [source, link.to]);
      }
      return true;
    });
  }

  /**
   * A brand-new node (joining at run time, `targetPort` its real Raft port): a link from it to every
   * node and from every node to it, and its id among the sources a hello may name.
   */
  async addNode(id: string, targetPort: number): Promise<void> {
    if (this.nodes.has(id)) throw new Error(`proxy: node ${id} exists`);
    const others = [...this.nodes];
    this.nodes.add(id);
    for (const other of others) {
      const otherPort = [...this.links.values()].find((link) => link.to === other)?.targetPort;
      if (otherPort === undefined) throw new Error(`proxy: no port of ${other}`);
      await this.open(id, other, otherPort);
      await this.open(other, id, targetPort);
    }
  }

  /** Opens (once) the inbound listener of node `to`, for every source; returns its address. */
  async inboundAddress(to: string): Promise<string> {
    const name = linkName("*", to);
    if (!this.links.has(name)) {
      const targetPort = [...this.links.values()].find((link) => link.to === to)?.targetPort;
      if (targetPort === undefined) throw new Error(`proxy: no node ${to}`);
      await this.open("*", to, targetPort);
    }
    const link = this.links.get(name);
    if (link === undefined) throw new Error(`proxy: no link ${name}`);
    return `${this.host}:${link.port}`;
  }

  /** The address node `from` must use to reach node `to`. */
  address(from: string, to: string): string {
    const link = this.links.get(linkName(from, to));
    if (link === undefined) throw new Error(`proxy: no link ${linkName(from, to)}`);
    return `${this.host}:${link.port}`;
  }

  /** Re-points the links towards `to` at a new port (a restarted node on another port). */
  retarget(to: string, targetPort: number): void {
    for (const link of this.links.values()) if (link.to === to) link.targetPort = targetPort;
  }

  isCut(a: string, b: string): boolean {
    return this.cut.has(linkName(a, b));
  }

  /** Cuts both directions between a and b. */
  cutLink(a: string, b: string): void {
    for (const [from, to] of [
      [a, b],
      [b, a],
    ] as const) {
      this.cut.add(linkName(from, to));
      const link = this.links.get(linkName(from, to));
      if (link !== undefined) {
        for (const s of link.sockets) s.destroy();
        link.sockets.clear();
      }
    }
    // Their connections through inbound listeners: destroying the client side drops its upstream.
    for (const [socket, [source, target]] of this.identified)
      if ((source === a && target === b) || (source === b && target === a)) socket.destroy();
  }

  healLink(a: string, b: string): void {
    this.cut.delete(linkName(a, b));
    this.cut.delete(linkName(b, a));
  }

  /** Cuts every link between nodes of different groups; links within a group are healed. */
  partition(groups: readonly (readonly string[])[]): void {
    const groupOf = new Map<string, number>();
    groups.forEach((g, i) => g.forEach((id) => groupOf.set(id, i)));
    for (const link of this.links.values()) {
      if (link.from === "*") continue; // its connections are cut with their source's link
      if (groupOf.get(link.from) === groupOf.get(link.to)) this.healLink(link.from, link.to);
      else this.cutLink(link.from, link.to);
    }
  }

  healAll(): void {
    this.cut.clear();
  }

  bytesForwarded(): number {
    let sum = 0;
    for (const link of this.links.values()) sum += link.bytes;
    return sum;
  }

  async close(): Promise<void> {
    for (const link of this.links.values()) {
      for (const s of link.sockets) s.destroy();
      await new Promise<void>((resolve) => link.server.close(() => resolve()));
    }
    this.links.clear();
  }
}

/** msgpack of the map key "from" (a fixstr of 4 bytes). */
const fromKey = Buffer.from([0xa4, ...Buffer.from("from")]);

/**
 * The source named by the first hello in `bytes` (the Raft dialer masks its frames with zero, so a
 * frame's msgpack is readable as sent), when it is one of `nodes`; null until it is readable.
 */
export function helloSource(bytes: Buffer, nodes: ReadonlySet<string>): string | null {
  for (let at = bytes.indexOf(fromKey); at !== -1; at = bytes.indexOf(fromKey, at + 1)) {
    const header = bytes[at + fromKey.length];
    if (header === undefined) return null;
    let start = at + fromKey.length + 1;
    let length: number;
    if (header >= 0xa0 && header <= 0xbf) length = header & 0x1f;
    else if (header === 0xd9) {
      const size = bytes[start];
      if (size === undefined) return null;
      length = size;
      start++;
    } else continue;
    if (start + length > bytes.length) return null;
    const id = bytes.subarray(start, start + length).toString("utf8");
    if (nodes.has(id)) return id;
  }
  return null;
}
