// A TCP proxy for every ordered pair of nodes: node a reaches node b's Raft port through the
// listener of link (a -> b), so links can be cut and healed one by one. A cut destroys the
// link's open connections (both directions) and refuses new ones until it is healed.
import { createServer, connect, type Server, type Socket } from "node:net";

/** Connections held open per link (a Raft pair needs a couple; more is a leak). */
export const connectionsPerLinkMax = 64;

interface Link {
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

  private constructor(private readonly host: string) {}

  /** Starts one listener per ordered pair of `targets` (node id -> its real Raft port). */
  static async start(targets: ReadonlyMap<string, number>, host = "127.0.0.1"): Promise<LinkProxy> {
    const proxy = new LinkProxy(host);
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
    client.on("data", (chunk: Buffer) => {
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
      if (link === undefined) continue;
      for (const s of link.sockets) s.destroy();
      link.sockets.clear();
    }
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
