// The one way our process tests, the bench and the fault harness pick a port for a child process.
//
// Why not simply listen on port 0 and hand that port on: the OS takes that port from its
// ephemeral range, the same range it draws the local ports of outgoing connections from. Between
// closing the probe and the child binding the port, any connection on the machine (a test's fetch,
// a Raft peer dialling out, another test file running in parallel) may get it as its local port,
// and the child dies with EADDRINUSE. Ports drawn at random from outside the ephemeral range are
// never handed to outgoing connections, so only another explicit bind can collide with them.
import { readFileSync } from "node:fs";
import { createServer } from "node:net";

/** The lowest port we hand out (below it sit well-known services). */
const portFloor = 10_000;
/** Random candidates tried before falling back to an OS-chosen port. */
const attemptsMax = 50;
/** Ports this process handed out already: never hand one out twice. */
const handedOut = new Set<number>();

/** [low, high] of the OS's ephemeral range (Linux's default when it cannot be read). */
function ephemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    if (low !== undefined && high !== undefined && Number.isInteger(low) && Number.isInteger(high)) return [low, high];
  } catch {
    // Not Linux: fall through to the default.
  }
  return [32_768, 60_999];
}

/** The widest run of ports outside the ephemeral range, as [first, last]. */
function candidateRange(): [number, number] {
  const [low, high] = ephemeralRange();
  const below: [number, number] = [portFloor, Math.max(portFloor, low - 1)];
  const above: [number, number] = [Math.min(65_535, high + 1), 65_535];
  return below[1] - below[0] >= above[1] - above[0] ? below : above;
}

/** Resolves with `port` if it can be bound on 127.0.0.1 right now, else with null. */
function probe(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(null));
    server.listen(port, "127.0.0.1", () => {
      const address = server.address();
      const bound = address !== null && typeof address !== "string" ? address.port : null;
      server.close(() => resolve(bound));
    });
  });
}

/** A TCP port on 127.0.0.1 that was free a moment ago and lies outside the ephemeral range. */
export async function freePort(): Promise<number> {
  const [first, last] = candidateRange();
  for (let attempt = 0; attempt < attemptsMax; attempt++) {
    const candidate = first + Math.floor(Math.random() * (last - first + 1));
    if (handedOut.has(candidate)) continue;
    const port = await probe(candidate);
    if (port !== null) {
      handedOut.add(port);
      return port;
    }
  }
  // A machine with nearly every port outside the ephemeral range taken: let the OS choose.
  const port = await probe(0);
  if (port === null) throw new Error("no free TCP port on 127.0.0.1");
  handedOut.add(port);
  return port;
}
