// The official v2 clients (@unkey/api@2.5.1, @unkey/ratelimit@2.1.4) unchanged against one keyraft
// process (`node packages/gateway/dist/main.js`, built by `tsc -b`): every method, in the flows
// of v2-suite.ts.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { killAll, startNode, type NodeProcess } from "../e2e/node-process.js";
import {
  clientsFor,
  errorsFlow,
  identitiesFlow,
  keysFlow,
  migrationEnv,
  permissionsAndRolesFlow,
  ratelimitFlow,
  ratelimitPackageFlow,
  type Clients,
  type V2Target,
} from "./v2-suite.js";

const rootKey = "client_v2_root_0123456789abcdef";
let dataDir = "";
let node: NodeProcess;
let target: V2Target;
let clients: Clients;

beforeAll(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "keyraft-client-v2-"));
  node = await startNode(dataDir, { KEYRAFT_ROOT_KEY: rootKey, ...migrationEnv });
  target = { baseUrls: [node.baseUrl], rootKey };
  clients = clientsFor(target);
});
afterAll(async () => {
  killAll();
  if (dataDir !== "") await rm(dataDir, { recursive: true, force: true });
});

describe("@unkey/api@2.5.1 against one keyraft node", () => {
  it("permissions and roles", () => permissionsAndRolesFlow(clients, "one"));
  it("identities", () => identitiesFlow(clients, "one"));
  it("apis, keys, verification, reroll, migration and analytics", () => keysFlow(clients, "one"));
  it("ratelimit and overrides", () => ratelimitFlow(clients, "one"));
  it("errors", () => errorsFlow(clients));
});

describe("@unkey/ratelimit@2.1.4 against one keyraft node", () => {
  it("Ratelimit.limit and Overrides", () => ratelimitPackageFlow(target, "one"));
});
