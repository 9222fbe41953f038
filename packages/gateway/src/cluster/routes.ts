// The cluster's HTTP surface, registered by buildApp (app.ts) when it serves a Raft node:
//   GET  /v1/cluster.status      this node's view: role, term, leader, indexes, staleness, peers   root key holding `*` or `cluster.*.read`
//   GET  /v1/cluster.metrics     counters of the Raft loop, the transport and write batching      root key holding `*` or `cluster.*.read`
//   GET  /v1/cluster.applyTimes  when entries were applied here (benchmarks)                     root key holding `*`
//   POST /v1/cluster.addNode     { nodeId, address: "host:raftPort" } root key holding `*`
//   POST /v1/cluster.removeNode  { nodeId }                          root key holding `*`
// and the staleness guard on verifications: past KEYRAFT_MAX_STALENESS_MS a node refuses them
// (503, v1 error body) or, with KEYRAFT_STALE_POLICY=serve, answers and marks them stale.
import type { AuditEventAction } from "@keyraft/core";
import type { FastifyPluginCallback, FastifyReply, FastifyRequest } from "fastify";
import fp from "fastify-plugin";
import { Type } from "@sinclair/typebox";
import type { FastifyPluginCallbackTypebox } from "@fastify/type-provider-typebox";
import { anyOf, authenticate, type RootKeyDeps } from "../auth/root-key.js";
import { V1Error } from "../errors.js";
import { applyTimesEntriesMax } from "./apply-times.js";
import type { ClusterNode } from "./cluster-node.js";
import { isNodeId, parseHostPort, peerUrl, type StalePolicy } from "./config.js";
import { retryAfterSeconds, unavailable } from "./errors.js";
import type { RpcResult } from "./rpc.js";
import type { GatewayServices } from "../services.js";

/** Checked by the handler (its own message), so any value passes the schema. */
const applyTimesQuery = Type.Object({ from: Type.Optional(Type.Unknown()), to: Type.Optional(Type.Unknown()) });

export const staleHeader = "Keyraft-Stale";
export const roleHeader = "Keyraft-Role";
export const clusterStatusPath = "/v1/cluster.status";
export const applyTimesPath = "/v1/cluster.applyTimes";
const verifyPaths = new Set(["/v1/keys.verifyKey", "/v1/keys/verify", "/v2/keys.verifyKey"]);
const livenessPaths = new Set(["/v1/liveness", "/v2/liveness"]);
/** Reading the cluster's status and counters: any root key holding `*` or `cluster.*.read`. */
export const clusterReadPermission = "cluster.*.read";
const clusterReadQuery = anyOf("*", clusterReadPermission);

export interface StalenessGuardOptions {
  cluster: ClusterNode;
  stalePolicy: StalePolicy;
}

/** Cross-cutting (fastify-plugin): the role and staleness headers on liveness, the guard on verifications. */
const stalenessGuard: FastifyPluginCallback<StalenessGuardOptions> = (app, { cluster, stalePolicy }, done) => {
  app.addHook("onRequest", (request, reply, done) => {
    // The matched route's path (no allocation; undefined for a 404).
    const path = request.routeOptions.url ?? "";
    if (livenessPaths.has(path)) {
      // Liveness stays 200 (the process is alive); the headers say whether its answers are fresh.
      reply.header(roleHeader, cluster.isLeader() ? "leader" : "follower");
      if (cluster.staleness.isStale()) reply.header(staleHeader, String(cluster.staleness.stalenessMs()));
      return done();
    }
    if (!verifyPaths.has(path) || !cluster.staleness.isStale()) return done();
    const stalenessMs = cluster.staleness.stalenessMs();
    reply.header(staleHeader, String(stalenessMs));
    if (stalePolicy === "serve") return done();
    // 503 + Retry-After in the route's API's error body (v1 or v2: its error handler answers).
    done(
      unavailable(
        `this node's replica may be stale: no leader backed by a quorum confirmed it for ${stalenessMs} ms ` +
          `(bound ${cluster.staleness.maxStalenessMs} ms); retry on another node`,
      ),
    );
  });
  done();
};

export const stalenessGuardPlugin = fp(stalenessGuard, { name: "keyraft-staleness-guard" });

export interface ClusterRoutesOptions extends RootKeyDeps, Pick<GatewayServices, "submit"> {
  cluster: ClusterNode;
}

export const clusterRoutes: FastifyPluginCallbackTypebox<ClusterRoutesOptions> = (app, deps, done) => {
  const { cluster } = deps;
  app.get(clusterStatusPath, async (request, reply) => {
    await authenticate(deps, request, clusterReadQuery);
    return reply.send(await cluster.statusWithProgress());
  });

  app.get("/v1/cluster.metrics", async (request, reply) => {
    await authenticate(deps, request, clusterReadQuery);
    return reply.send(cluster.metrics());
  });

  // Diagnostics (the cluster benchmark): when entries from..to were applied on this node, as
  // [index, wall-clock ms] pairs; entries not applied here or forgotten are left out.
  app.get(applyTimesPath, { schema: { querystring: applyTimesQuery } }, async (request, reply) => {
    await authenticate(deps, request, anyOf("*"));
    const { query } = request;
    const from = Number(query.from);
    const to = Number(query.to);
    if (
      !Number.isSafeInteger(from) ||
      !Number.isSafeInteger(to) ||
      from < 1 ||
      to < from ||
      to - from >= applyTimesEntriesMax
    ) {
      throw new V1Error("BAD_REQUEST", `from and to: integers with 1 <= from <= to < from + ${applyTimesEntriesMax}`);
    }
    const times: [number, number][] = [];
    for (let index = from; index <= to; index++) {
      const atMs = cluster.applyTimes.get(index);
      if (atMs !== null) times.push([index, atMs]);
    }
    return reply.send({ nodeId: cluster.nodeId, times });
  });

  app.post("/v1/cluster.addNode", async (request, reply) => {
    await authenticate(deps, request, anyOf("*"));
    const body = objectBody(request);
    const nodeId = stringField(body, "nodeId");
    const address = parseHostPort(stringField(body, "address"));
    if (!isNodeId(nodeId)) throw new V1Error("BAD_REQUEST", 'nodeId: expected 1 to 64 letters, digits, "_" or "-"');
    if (address === null) throw new V1Error("BAD_REQUEST", "address: expected host:raftPort");
    const result = await cluster.addNode(nodeId, peerUrl(address));
    if (result.ok) await audited(deps, request, "cluster.addNode", nodeId, { address: peerUrl(address) });
    return answer(reply, result, {
      nodeId,
      address: peerUrl(address),
      note: "added as a learner; it becomes a voter once it has caught up (see /v1/cluster.status)",
    });
  });

  app.post("/v1/cluster.removeNode", async (request, reply) => {
    await authenticate(deps, request, anyOf("*"));
    const nodeId = stringField(objectBody(request), "nodeId");
    if (!isNodeId(nodeId)) throw new V1Error("BAD_REQUEST", 'nodeId: expected 1 to 64 letters, digits, "_" or "-"');
    const result = await cluster.removeNode(nodeId);
    if (result.ok) await audited(deps, request, "cluster.removeNode", nodeId, {});
    return answer(reply, result, { nodeId });
  });
  done();
};

/**
 * The audit entry of a membership change that took effect. Recorded after it (the change is not
 * a key-state command); a failure to record it is logged, never turned into a failed answer for a
 * change that happened.
 */
async function audited(
  deps: Pick<GatewayServices, "submit">,
  request: FastifyRequest,
  action: AuditEventAction,
  nodeId: string,
  changes: Record<string, string>,
): Promise<void> {
  try {
    await deps.submit(request, { type: "auditEvent", action, targetIds: [nodeId], changes });
  } catch (error) {
    request.log.error({ err: error, action, nodeId }, "could not record the audit entry of a membership change");
  }
}

function answer(reply: FastifyReply, result: RpcResult, fields: Record<string, string>): FastifyReply {
  if (result.ok) return reply.send({ ...fields, index: result.index });
  if (result.retry || result.overloaded === true) {
    throw new V1Error("INTERNAL_SERVER_ERROR", `no leader took the change: ${result.message}`, {
      statusCode: 503,
      headers: { "Retry-After": retryAfterSeconds },
    });
  }
  throw new V1Error("PRECONDITION_FAILED", result.message);
}

/** The body of the membership routes, checked here (not by a schema) to keep their own messages. */
function objectBody(request: FastifyRequest): object {
  const body = request.body;
  if (typeof body !== "object" || body === null || Array.isArray(body))
    throw new V1Error("BAD_REQUEST", "expected a JSON object body");
  return body;
}

function stringField(body: object, name: string): string {
  const value: unknown = Reflect.get(body, name);
  if (typeof value !== "string") throw new V1Error("BAD_REQUEST", `${name}: Required`);
  return value;
}
