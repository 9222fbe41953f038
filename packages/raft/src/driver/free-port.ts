// The one way our process tests, the bench and the fault harness pick a port for a child process.
import { createServer } from "node:net";

/** A TCP port that was free a moment ago on 127.0.0.1 (the OS picks it; a tiny race remains). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (address === null || typeof address === "string") {
        server.close();
        reject(new Error("no port"));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}
