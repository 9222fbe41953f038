// The official v2 clients (@unkey/api@2.5.1, @unkey/ratelimit@2.1.4) unchanged against a
// three-node cluster of real processes (needs `tsc -b`): the flows of test/client/v2-suite.ts,
// writing through a follower and reading on another, counters and analytics across the nodes.

import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
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
} from "../client/v2-suite.js";
import {
  killAllMembers,
  leaderOf,
  peersOf,
  planMembers,
  rootKey,
  spawnMember,
  waitLive,
  type ClusterMember,
} from "./cluster-harness.js";

let root = "";
let members: ClusterMember[] = [];
let target: V2Target;
let clients: Clients;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "keyraft-cluster-v2-"));
  members = await planMembers(["n1", "n2", "n3"], (id) => join(root, id));
  for (const member of members) spawnMember(member, peersOf(members), migrationEnv);
  await Promise.all(members.map((member) => waitLive(member)));
  const leader = await leaderOf(members);
  const followers = members.filter((member) => member !== leader);
  // Writes go through a follower, reads happen on the other one.
  target = { baseUrls: [followers[0]!.baseUrl, leader.baseUrl, followers[1]!.baseUrl], rootKey };
  clients = clientsFor(target);
}, 60_000);

afterAll(async () => {
  killAllMembers();
  await rm(root, { recursive: true, force: true });
});

describe("@unkey/api@2.5.1 against a three-node cluster", () => {
  it("permissions and roles", () => permissionsAndRolesFlow(clients, "three"));
  it("identities", () => identitiesFlow(clients, "three"));
  it("apis, keys, verification, reroll, migration and analytics", () => keysFlow(clients, "three"), 30_000);
  it("ratelimit and overrides", () => ratelimitFlow(clients, "three"), 30_000);
  it("errors", () => errorsFlow(clients));
});

describe("@unkey/ratelimit@2.1.4 against a three-node cluster", () => {
  it("Ratelimit.limit and Overrides", () => ratelimitPackageFlow(target, "three"), 30_000);
});
