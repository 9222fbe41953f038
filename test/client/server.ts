// A keyraft node for the client suites: the in-memory gateway harness listening on a free port.

import { harness, rootKey, type Harness } from "../../packages/gateway/test/app-harness.js";

export interface ClientServer {
  h: Harness;
  baseUrl: string;
  rootKey: string;
  close(): Promise<void>;
}

export async function startServer(): Promise<ClientServer> {
  const h = await harness();
  const address = await h.app.listen({ host: "127.0.0.1", port: 0 });
  return { h, baseUrl: address, rootKey, close: () => h.app.close() };
}
