// The keyraft node process: configuration, storage, the app, signals. Everything here is wiring;
// the behaviour lives in the cluster (cluster/: Raft, forwarding, staleness), the key state
// (@keyraft/core) and the routes (app.ts). A node without KEYRAFT_PEERS is a one-member cluster.
//
// Exit codes: 0 clean shutdown; 1 fatal error (a failed disk write, an uncaught error, a failed
// start, a second signal or a shutdown that timed out); 2 invalid configuration.
import { randomBytes } from "node:crypto";
import { keyStateMachine, newKeySecret, ROOT_API_ID, SlidingWindowLimiter, type KeyState } from "@keyraft/core";
import type { Logger } from "pino";
import { loadAnalytics, saveAnalytics } from "./analytics/persist.js";
import { VerificationRecorder } from "./analytics/recorder.js";
import { analyticsPeerTimeoutMsDefault, ClusterVerificationPeers } from "./analytics/cluster-peers.js";
import { bootstrapRootKey, buildApp, type AppDeps } from "./app.js";
import { serverFactory } from "./http-server.js";
import { restrictTree, usePrivateUmask } from "./store/private-files.js";
import { parseConfig, type Config } from "./config.js";
import { createLogger } from "./logger.js";
import { LevelCounterDurability } from "./store/counter-durability.js";
import { ClusterNode } from "./cluster/cluster-node.js";
import { dataDirLayout } from "./cluster/data-dir.js";
import { migrateLegacyStore } from "./cluster/migrate-legacy.js";
import { generateRootKeyOnce, type RootKeyLink } from "./cluster/root-key.js";
import { generatedRootKeyBytes } from "./state/bootstrap.js";
import { RandomPool } from "./state/random-pool.js";
import { hashKey } from "./auth/hash.js";
import { ObservedKeyMachine } from "./counters/credits/credit-events.js";
import { startCreditLeases } from "./counters/credits/credit-leases.js";
import { ClusterRateLimits } from "./counters/ratelimit/cluster-limits.js";
import { V1Error } from "./errors.js";
import { openStoreDb, storeWriteCounts, type StoreDb } from "./store/level-db.js";
import { GatewayMetrics, type MetricsSources } from "./metrics/gateway-metrics.js";
import { startMetricsServer } from "./metrics/server.js";

export const exitCodeFatal = 1;
export const exitCodeConfig = 2;
/** How often a shutting-down server closes connections that went idle after their last response. */
const idleReapIntervalMs = 50;
/** While waiting for the cluster at start, a log line says so this often. */
const freshWaitLogEveryMs = 5000;
/** Attempts of the root-key bootstrap write when the cluster answers 503 (an election at start). */
const startWriteAttemptsMax = 5;
/** Without KEYRAFT_ROOT_KEY, a node checks this often whether the cluster has its root key yet (cluster/root-key.ts). */
const rootKeyPollMs = 200;

interface Node {
  close(): Promise<void>;
}

async function main(): Promise<void> {
  const parsed = parseConfig(process.env);
  if (!parsed.ok) {
    for (const error of parsed.errors) process.stderr.write(`keyraft: invalid configuration: ${error}\n`);
    process.exit(exitCodeConfig);
  }
  const config = parsed.config;
  // Everything the node writes from here on is its user's alone (store/private-files.ts).
  usePrivateUmask();
  const logger = createLogger({ level: config.logLevel });
  const die = (message: string, error: unknown): never => {
    logger.fatal({ err: error }, message);
    process.exit(exitCodeFatal);
  };
  process.on("uncaughtException", (error) => die("uncaught exception; stopping", error));
  process.on("unhandledRejection", (reason) => die("unhandled rejection; stopping", reason));

  // A stop asked for while the node starts (it may wait long for a quorum) ends the process at
  // once with 0: nothing was acknowledged yet, and every write so far is synced, so this is no
  // different from a crash the store is built to survive. Once it is up, the graceful stop
  // (stopOnSignal) answers instead. One listener for the process's life, not one swapped for
  // another: Node delivers a signal to the listener that was registered when the event loop reads
  // it, so a signal that came in during the start's last synchronous work was dropped when its
  // listener was removed in the same turn (the node then ran on as if never asked to stop).
  let onSignalWhenUp: ((signal: NodeJS.Signals) => void) | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    if (onSignalWhenUp !== null) return onSignalWhenUp(signal);
    logger.info({ signal }, "stopped while starting");
    process.exit(0);
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  let node: Node;
  try {
    node = await startNode(config, logger, (error) =>
      die("the store failed (a disk write, or apply threw); stopping so nothing unacknowledged is served", error),
    );
  } catch (error) {
    process.stderr.write(`keyraft: could not start: ${describeStartError(error, config)}\n`);
    die("could not start", error);
    return;
  }
  onSignalWhenUp = stopOnSignal(node, config, logger);
}

/**
 * Opens the Raft node (a one-member cluster without KEYRAFT_PEERS: the same code path), waits
 * until it is confirmed fresh by a leader backed by a quorum (for a joining node: until it has
 * been added and has caught up), ensures the root key, then listens. Each starter below returns
 * what it made and how to close it; the shutdown closes them in the order written in `close`.
 */
async function startNode(config: Config, logger: Logger, onFatal: (error: unknown) => void): Promise<Node> {
  // The one source of wall-clock time of the node (KEYRAFT_CLOCK_OFFSET_MS skews it for fault tests).
  const { clockOffsetMs } = config;
  const nowMs = () => Date.now() + clockOffsetMs;
  const store = await startStore(config, logger);
  let cluster: StartedCluster | null = null;
  try {
    cluster = await startCluster(config, logger, store.raftDir, nowMs, onFatal);
    const counters = await startCounters(config, logger, store.db, nowMs, onFatal);
    const rateLimits = startRateLimits(config, logger, cluster, counters, nowMs);
    await waitUntilFresh(cluster.node, logger);
    logger.info(
      { appliedIndex: cluster.node.commandLog.appliedIndex(), leader: cluster.node.status().leader },
      "caught up with the cluster",
    );
    const credits = await startCredits(config, logger, store.db, cluster, nowMs, onFatal);
    const rootKey = await startRootKey(config, logger, cluster, nowMs);
    const analytics = await startAnalytics(logger, store.nodeDir, cluster.node, nowMs);
    const metrics = await startMetrics(config, logger, {
      cluster: cluster.node,
      creditLeases: () => credits.status(),
      rateLimitPlacements: () => rateLimits.rateLimits.placements,
      storeWrites: () => storeWriteCounts(store.db),
    });
    const http = await startHttp(config, logger, {
      metrics: metrics.metrics,
      ...(metrics.endpoint === null ? {} : { metricsEndpoint: metrics.endpoint }),
      auditRetentionDays: config.audit.retentionDays,
      logger,
      analytics: analytics.recorder,
      verificationPeers: analytics.peers,
      state: cluster.machine.state,
      commandLog: cluster.node.commandLog,
      limiter: counters.limiter,
      counterDurability: counters.durability,
      rateLimits: rateLimits.rateLimits,
      creditLeases: credits.spender,
      nowMs,
      bodyLimitBytes: config.bodyLimitBytes,
      keyMigrations: config.keyMigrations,
      cluster: { cluster: cluster.node, stalePolicy: config.cluster.stalePolicy },
    });
    // Only now may a leader promote this node, if it is a learner (cluster-node.ts, `serving`).
    cluster.node.markServing();
    const node = cluster;
    return {
      async close() {
        await node.node.handOffLeadership(); // a leader hands over first (bounded wait)
        await http.close(); // stop accepting; in-flight requests finish
        await metrics.close();
        rootKey.stop();
        await analytics.close();
        rateLimits.close();
        await credits.close(); // settles open leases with their exact spends (bounded wait), then the journal
        await node.close(); // every acknowledged write is already committed and durable
        await counters.close();
        await store.close();
      },
    };
  } catch (error) {
    if (cluster !== null) await cluster.close().catch(() => undefined);
    await closeQuietly(store.db);
    throw error;
  }
}

/** The data directory: a legacy single-node store migrated, then the node's LevelDB opened. */
async function startStore(config: Config, logger: Logger) {
  const layout = dataDirLayout(config.dataDir);
  const narrowed = await restrictTree(config.dataDir);
  if (narrowed > 0)
    logger.warn({ dataDir: config.dataDir, narrowed }, "data directory was readable by others; narrowed to 0700/0600");
  const { nodeId, peers, join } = config.cluster;
  await migrateLegacyStore({
    dataDir: config.dataDir,
    ...layout,
    nodeId,
    singleMember: peers.length === 1 && !join,
    logger,
  });
  const db = await openStoreDb(layout.nodeDir);
  return { db, nodeDir: layout.nodeDir, raftDir: layout.raftDir, close: () => db.close() };
}

type StartedStore = Awaited<ReturnType<typeof startStore>>;

/** The Raft node over the key state machine, started (it may not be fresh yet). */
async function startCluster(
  config: Config,
  logger: Logger,
  raftDir: string,
  nowMs: () => number,
  onFatal: (error: unknown) => void,
) {
  const { nodeId, peers, join } = config.cluster;
  // Observed: the credit leases (counters/credits) hear the lease outcomes and resets it applies.
  const machine = new ObservedKeyMachine(keyStateMachine());
  const node = await ClusterNode.open({
    config: config.cluster,
    raftDir,
    machine,
    snapshotEntries: config.snapshotEveryEntries,
    snapshotBytes: config.snapshotEveryBytes,
    pendingMax: config.writeQueueEntriesMax,
    logger,
    nowMs,
    onFatal,
  });
  const started = { node, machine, close: () => node.close() };
  try {
    await node.start();
  } catch (error) {
    await node.close().catch(() => undefined);
    throw error;
  }
  logger.info(
    {
      nodeId,
      raftPort: node.raftPort,
      members: peers.map((peer) => peer.id),
      join,
      appliedIndex: node.commandLog.appliedIndex(),
    },
    "cluster node started",
  );
  return started;
}

type StartedCluster = Awaited<ReturnType<typeof startCluster>>;

/** The rate limiter and the durable reservations of its counts, restored from the last run. */
async function startCounters(
  config: Config,
  logger: Logger,
  db: StartedStore["db"],
  nowMs: () => number,
  onFatal: (error: unknown) => void,
) {
  const limiter = new SlidingWindowLimiter();
  const durability = await LevelCounterDurability.open(db, {
    nowMs,
    onFatal,
    bucketWidthMs: (durationMs) => limiter.bucketWidthMs(durationMs),
  });
  const restoredBuckets = durability.restore(limiter, nowMs());
  logger.info({ dataDir: config.dataDir, restoredBuckets }, "rate-limit reservations restored");
  return { limiter, durability, close: () => durability.close() };
}

/** Rate limits across the cluster (counters/ratelimit): owners judge, successors reserve, async limits reconcile. */
function startRateLimits(
  config: Config,
  logger: Logger,
  cluster: StartedCluster,
  counters: Awaited<ReturnType<typeof startCounters>>,
  nowMs: () => number,
) {
  const rateLimits = new ClusterRateLimits({
    transport: cluster.node.counterTransport(),
    state: cluster.machine.state,
    limiter: counters.limiter,
    durability: counters.durability,
    config: config.rateLimits,
    nowMs,
    logger: logger.child({ component: "ratelimits" }),
  });
  rateLimits.start();
  return { rateLimits, close: () => rateLimits.stop() };
}

/** Credit leases (counters/credits): verifications with credits spend from this node's leases. */
function startCredits(
  config: Config,
  logger: Logger,
  db: StartedStore["db"],
  cluster: StartedCluster,
  nowMs: () => number,
  onFatal: (error: unknown) => void,
) {
  const { node, machine } = cluster;
  return startCreditLeases({
    nodeId: config.cluster.nodeId,
    db,
    machine,
    config: config.credits,
    propose: (command) => node.commandLog.append(command),
    isLeader: () => node.isLeader(),
    voters: () => node.raft.status().conf.voters,
    transport: node.creditTransport(),
    nowMs,
    logger: logger.child({ component: "credits" }),
    onFatal,
  });
}

/**
 * The root key: KEYRAFT_ROOT_KEY is ensured by every node (the same key, idempotent by hash);
 * without it, exactly one key is generated for the cluster (cluster/root-key.ts). The leader at
 * start waits for it before listening; the others watch in the background and generate one only
 * if they come to lead while there is none. `stop` ends that watch.
 */
async function startRootKey(config: Config, logger: Logger, cluster: StartedCluster, nowMs: () => number) {
  const { node, machine } = cluster;
  const commandLog = node.commandLog;
  let stopped = false;
  if (config.rootKey !== null) {
    const rootKey = config.rootKey;
    const root = await withRetries(
      () =>
        bootstrapRootKey({
          state: machine.state,
          commandLog,
          rootKey,
          nowMs,
          randomBytes,
          auditRetentionDays: config.audit.retentionDays,
        }),
      logger,
    );
    if (root.ignored !== null) {
      // Bootstrapped once; since then the API governs it (state/bootstrap.ts).
      logger.warn(
        { rootKeyId: root.keyId === "" ? undefined : root.keyId, reason: root.ignored },
        "KEYRAFT_ROOT_KEY was revoked or deleted through the API and stays so; remove it from the environment",
      );
    } else logger.info({ rootKeyId: root.keyId, created: root.changed, fromEnvironment: true }, "root key ready");
  } else {
    const generation = generateRootKey(node, machine.state, commandLog, {
      nowMs,
      logger,
      stopped: () => stopped,
      auditRetentionDays: config.audit.retentionDays,
    });
    if (node.isLeader()) await generation;
    else void generation;
  }
  return {
    stop() {
      stopped = true;
    },
  };
}

/** This node's verification analytics (restored from its last run, saved on close) and the cluster's view of them. */
async function startAnalytics(logger: Logger, nodeDir: string, node: ClusterNode, nowMs: () => number) {
  const recorder = new VerificationRecorder(nowMs);
  const restoredSeries = await loadAnalytics(recorder, nodeDir).catch((error: unknown) => {
    // Analytics are not replicated state: a damaged file costs history, never the start.
    logger.warn({ err: error }, "saved analytics unreadable; starting with none");
    return 0;
  });
  logger.info({ restoredSeries }, "verification analytics restored");
  // Analytics queries merge every member's series (each node keeps only its own verifications).
  const peers = new ClusterVerificationPeers(
    node.analyticsPeers((filter) => recorder.select(filter)),
    { timeoutMs: analyticsPeerTimeoutMsDefault, logger: logger.child({ component: "analytics" }) },
  );
  return {
    recorder,
    peers,
    close: () =>
      saveAnalytics(recorder, nodeDir).catch((error: unknown) =>
        logger.error({ err: error }, "could not save verification analytics"),
      ),
  };
}

/**
 * The node's metrics (metrics/): read from its parts when Prometheus scrapes. GET /metrics is
 * served by the API (`endpoint`) unless KEYRAFT_METRICS_PORT names another port, where a server
 * of its own answers.
 */
async function startMetrics(config: Config, logger: Logger, sources: MetricsSources) {
  const metrics = new GatewayMetrics();
  metrics.attach(sources);
  const { port, token } = config.metrics;
  if (port === null || port === config.port) return { metrics, endpoint: { token }, close: async () => {} };
  const server = await startMetricsServer({ metrics, token, host: config.host, port, logger });
  logger.info({ port: (server.server.address() as { port: number }).port }, "metrics listening");
  return { metrics, endpoint: null, close: () => server.close() };
}

/** The HTTP API (app.ts), listening; its close lets in-flight requests finish. */
async function startHttp(config: Config, logger: Logger, deps: Omit<AppDeps, "randomBytes">) {
  const secretRandom = new RandomPool(randomBytes);
  const app = buildApp({
    ...deps,
    randomBytes: (length: number) => secretRandom.take(length),
    serverFactory: serverFactory(config.http),
  });
  const address = await app.listen({ host: config.host, port: config.port });
  logger.info({ address, nodeId: config.cluster.nodeId, tls: config.http.tls !== null }, "keyraft listening");
  return {
    app,
    async close() {
      // fastify closes the idle keep-alive connections once, when close starts; a connection
      // busy then goes idle after its response and would hold the server open until the
      // keep-alive timeout. Reap those as they appear.
      const reaper = setInterval(() => app.server.closeIdleConnections(), idleReapIntervalMs);
      try {
        await app.close(); // stop accepting; in-flight requests finish
      } finally {
        clearInterval(reaper);
      }
    },
  };
}

/** Runs the generation loop (cluster/root-key.ts) and prints a generated key once. Never rejects. */
async function generateRootKey(
  cluster: ClusterNode,
  state: KeyState,
  commandLog: ClusterNode["commandLog"],
  options: { nowMs(): number; logger: Logger; stopped(): boolean; auditRetentionDays: number },
): Promise<void> {
  const secret = newKeySecret("unkey", randomBytes(generatedRootKeyBytes));
  const link: RootKeyLink = {
    isLeader: () => cluster.isLeader(),
    barrier: () => cluster.raft.readIndex(),
    rootKeyHash: () => {
      const rootKeyId = state.keys.idsOfApi(ROOT_API_ID)[0];
      return rootKeyId === undefined ? null : (state.keys.get(rootKeyId)?.hash ?? null);
    },
    propose: async (plaintext) => {
      await bootstrapRootKey({
        state,
        commandLog,
        rootKey: plaintext,
        nowMs: options.nowMs,
        randomBytes,
        auditRetentionDays: options.auditRetentionDays,
      });
    },
    hash: hashKey,
  };
  try {
    const result = await generateRootKeyOnce(link, secret, {
      pollMs: rootKeyPollMs,
      logger: options.logger,
      stopped: options.stopped,
    });
    options.logger.info(
      { generatedHere: result === "generated", fromEnvironment: false },
      result === "stopped" ? "root key: stopped before one existed" : "root key ready",
    );
    // Printed once, straight to stdout and never through the logger (which would keep it in log files).
    if (result === "generated") process.stdout.write(`\nroot key (shown once, store it now): ${secret}\n\n`);
  } catch (error) {
    options.logger.error({ err: error }, "root key generation failed; set KEYRAFT_ROOT_KEY and restart a node");
  }
}

/** A start-time write that met a leader change (503: retry) is tried again a few times. */
async function withRetries<T>(attempt: () => Promise<T>, logger: Logger): Promise<T> {
  for (let attemptNumber = 1; ; attemptNumber++) {
    try {
      return await attempt();
    } catch (error) {
      const retryable = error instanceof V1Error && error.statusCode === 503;
      if (!retryable || attemptNumber >= startWriteAttemptsMax) throw error;
      logger.warn(
        { err: error.message, attempt: attemptNumber },
        "root key bootstrap: the cluster did not take the write; retrying",
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** Waits for the first confirmation by a quorum-backed leader, saying every few seconds what it waits for. */
async function waitUntilFresh(cluster: ClusterNode, logger: Logger): Promise<void> {
  for (;;) {
    try {
      await cluster.waitFresh(freshWaitLogEveryMs);
      return;
    } catch {
      const { leader, voters, learners } = cluster.status();
      const member = voters.includes(cluster.nodeId) || learners.includes(cluster.nodeId);
      logger.warn(
        { leader, voters, learners, nodeId: cluster.nodeId },
        voters.length === 0
          ? "waiting to be added to the cluster (npm run cluster:ctl -- add ... on a member)"
          : member
            ? "waiting for a leader backed by a quorum of the cluster (start the other members)"
            : "this node is not a member of the cluster its data dir belongs to (was KEYRAFT_NODE_ID changed, or was it removed?); waiting to be added",
      );
    }
  }
}

/** SIGTERM/SIGINT: graceful stop then exit 0; a second signal, or the timeout, exits at once with 1. */
function stopOnSignal(node: Node, config: Config, logger: Logger): (signal: NodeJS.Signals) => void {
  let stopping = false;
  return (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, "second signal: exiting without finishing the shutdown");
      process.exit(exitCodeFatal);
    }
    stopping = true;
    logger.info({ signal, timeoutMs: config.shutdownTimeoutMs }, "shutting down: finishing in-flight requests");
    const timer = setTimeout(() => {
      logger.error({ timeoutMs: config.shutdownTimeoutMs }, "shutdown timed out; exiting");
      process.exit(exitCodeFatal);
    }, config.shutdownTimeoutMs);
    timer.unref();
    node.close().then(
      () => {
        logger.info("stopped");
        process.exit(0);
      },
      (error: unknown) => {
        logger.fatal({ err: error }, "shutdown failed");
        process.exit(exitCodeFatal);
      },
    );
  };
}

function describeStartError(error: unknown, config: Config): string {
  const text =
    error instanceof Error
      ? `${error.message}${error.cause instanceof Error ? `: ${error.cause.message}` : ""}`
      : String(error);
  if (/lock/i.test(text)) return `the data directory ${config.dataDir} is in use by another process (${text})`;
  if (/EADDRINUSE/.test(text)) return `${config.host}:${config.port} is already in use`;
  return text;
}

async function closeQuietly(db: StoreDb): Promise<void> {
  try {
    await db.close();
  } catch {
    // Already failing to start; the original error is the one to report.
  }
}

await main();
