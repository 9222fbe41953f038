import { describe, expect, it } from "vitest";
import { clusterIntegerVariables } from "../src/cluster/config.js";
import { integerVariables, parseConfig } from "../src/config.js";

const singleNodeCluster = {
  nodeId: "n1",
  peers: [{ id: "n1", host: "127.0.0.1", port: 0 }],
  peersConfigured: false,
  secret: null,
  previousSecret: null,
  tls: null,
  join: false,
  raftListenHost: "127.0.0.1",
  maxStalenessMs: 30_000,
  stalePolicy: "refuse",
  tickMs: 20,
  electionTicks: 10,
  heartbeatTicks: 2,
  keepEntries: 1000,
  keepBytes: 16 * 1_048_576,
  snapshotPieceBytes: 4 * 1_048_576,
  requestTimeoutMs: 5000,
};

const cwd = "/srv/keyraft";

describe("parseConfig", () => {
  it("gives the documented defaults for an empty environment", () => {
    expect(parseConfig({}, cwd)).toEqual({
      ok: true,
      config: {
        port: 8080,
        host: "127.0.0.1",
        dataDir: "/srv/keyraft/data",
        rootKey: null,
        logLevel: "info",
        snapshotEveryEntries: 10_000,
        snapshotEveryBytes: 64 * 1_048_576,
        bodyLimitBytes: 1_048_576,
        writeQueueEntriesMax: 10_000,
        shutdownTimeoutMs: 10_000,
        cluster: singleNodeCluster,
        credits: { leaseTtlMs: 10000, clockDriftMax: 0.01, leaseCredits: 100, leaseCreditsMax: 1600 },
        rateLimits: { reconcileMs: 50, suspectAfterMs: 1000, timeoutMs: 1000, forwardDelayMs: 0 },
        http: {
          requestTimeoutMs: 30_000,
          headersTimeoutMs: 10_000,
          keepAliveTimeoutMs: 10_000,
          connectionTimeoutMs: 60_000,
          connectionsMax: 10_000,
          tls: null,
        },
        keyMigrations: new Map(),
        metrics: { port: null, token: null },
        audit: { retentionDays: 90 },
        clockOffsetMs: 0,
      },
    });
  });

  it("reads the security variables: HTTP timeouts and cap, API TLS, cluster TLS, the previous cluster secret", () => {
    const secret = "s".repeat(32);
    const result = parseConfig(
      {
        KEYRAFT_HTTP_REQUEST_TIMEOUT_MS: "2000",
        KEYRAFT_HTTP_HEADERS_TIMEOUT_MS: "1000",
        KEYRAFT_HTTP_KEEP_ALIVE_TIMEOUT_MS: "500",
        KEYRAFT_HTTP_CONNECTION_TIMEOUT_MS: "700",
        KEYRAFT_HTTP_CONNECTIONS_MAX: "3",
        KEYRAFT_TLS_CERT_FILE: "/etc/keyraft/api.crt",
        KEYRAFT_TLS_KEY_FILE: "/etc/keyraft/api.key",
        KEYRAFT_NODE_ID: "n1",
        KEYRAFT_PEERS: "n1=10.0.0.1:7000,n2=10.0.0.2:7000",
        KEYRAFT_CLUSTER_SECRET: secret,
        KEYRAFT_CLUSTER_SECRET_PREVIOUS: "p".repeat(32),
        KEYRAFT_CLUSTER_TLS_CERT_FILE: "/etc/keyraft/node.crt",
        KEYRAFT_CLUSTER_TLS_KEY_FILE: "/etc/keyraft/node.key",
        KEYRAFT_CLUSTER_TLS_CA_FILE: "/etc/keyraft/ca.crt",
      },
      cwd,
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config.http).toEqual({
      requestTimeoutMs: 2000,
      headersTimeoutMs: 1000,
      keepAliveTimeoutMs: 500,
      connectionTimeoutMs: 700,
      connectionsMax: 3,
      tls: { certFile: "/etc/keyraft/api.crt", keyFile: "/etc/keyraft/api.key" },
    });
    expect(result.config.cluster).toMatchObject({
      previousSecret: "p".repeat(32),
      tls: { certFile: "/etc/keyraft/node.crt", keyFile: "/etc/keyraft/node.key", caFile: "/etc/keyraft/ca.crt" },
    });
  });

  it.each([
    [{ KEYRAFT_TLS_CERT_FILE: "/a.crt" }, /KEYRAFT_TLS_CERT_FILE and KEYRAFT_TLS_KEY_FILE go together/],
    [{ KEYRAFT_CLUSTER_TLS_CA_FILE: "/ca.crt" }, /KEYRAFT_CLUSTER_TLS_CERT_FILE, .* go together/],
    [{ KEYRAFT_HTTP_CONNECTIONS_MAX: "0" }, /KEYRAFT_HTTP_CONNECTIONS_MAX="0" is out of range/],
    [
      { KEYRAFT_HTTP_HEADERS_TIMEOUT_MS: "5000", KEYRAFT_HTTP_REQUEST_TIMEOUT_MS: "1000" },
      /KEYRAFT_HTTP_HEADERS_TIMEOUT_MS must not exceed KEYRAFT_HTTP_REQUEST_TIMEOUT_MS/,
    ],
    [{ KEYRAFT_CLUSTER_SECRET_PREVIOUS: "short" }, /KEYRAFT_CLUSTER_SECRET_PREVIOUS is invalid \(5 characters\)/],
    [{ KEYRAFT_CLOCK_OFFSET_MS: "1.5" }, /KEYRAFT_CLOCK_OFFSET_MS="1.5" is invalid/],
    [{ KEYRAFT_CLOCK_OFFSET_MS: "-600001" }, /KEYRAFT_CLOCK_OFFSET_MS="-600001" is invalid/],
  ])("refuses %j", (env, message) => {
    const result = parseConfig(env, cwd);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.join("\n")).toMatch(message);
    // A secret is never echoed.
    if (!result.ok) expect(result.errors.join("\n")).not.toContain("short");
  });

  it("reads every variable", () => {
    const result = parseConfig(
      {
        PORT: "0",
        HOST: "::",
        KEYRAFT_DATA_DIR: "/var/lib/keyraft",
        KEYRAFT_ROOT_KEY: "root_0123456789abcdef",
        KEYRAFT_LOG_LEVEL: "DEBUG",
        KEYRAFT_SNAPSHOT_EVERY: "500",
        KEYRAFT_SNAPSHOT_EVERY_BYTES: "0",
        KEYRAFT_BODY_LIMIT_BYTES: "2048",
        KEYRAFT_WRITE_QUEUE_MAX: "7",
        KEYRAFT_SHUTDOWN_TIMEOUT_MS: "0",
        KEYRAFT_CREDIT_LEASE_TTL_MS: "500",
        KEYRAFT_CLOCK_DRIFT_MAX: "0.05",
        KEYRAFT_CREDIT_LEASE_CREDITS: "1000",
        KEYRAFT_RATELIMIT_RECONCILE_MS: "20",
        KEYRAFT_RATELIMIT_SUSPECT_MS: "300",
        KEYRAFT_RATELIMIT_TIMEOUT_MS: "400",
        KEYRAFT_RATELIMIT_FORWARD_DELAY_MS: "5",
        KEYRAFT_KEY_MIGRATIONS: '{"mig_legacy":"sha256","mig_seam":"github.com/seamapi/prefixed-api-key"}',
        KEYRAFT_METRICS_PORT: "9464",
        KEYRAFT_METRICS_TOKEN: "scrape_0123456789abcdef",
        KEYRAFT_AUDIT_RETENTION_DAYS: "30",
        KEYRAFT_CLOCK_OFFSET_MS: "-150",
        UNRELATED: "ignored",
      },
      cwd,
    );
    expect(result).toEqual({
      ok: true,
      config: {
        port: 0,
        host: "::",
        dataDir: "/var/lib/keyraft",
        rootKey: "root_0123456789abcdef",
        logLevel: "debug",
        snapshotEveryEntries: 500,
        snapshotEveryBytes: 0,
        bodyLimitBytes: 2048,
        writeQueueEntriesMax: 7,
        shutdownTimeoutMs: 0,
        cluster: singleNodeCluster,
        credits: { leaseTtlMs: 500, clockDriftMax: 0.05, leaseCredits: 1000, leaseCreditsMax: 16000 },
        rateLimits: { reconcileMs: 20, suspectAfterMs: 300, timeoutMs: 400, forwardDelayMs: 5 },
        http: expect.objectContaining({ tls: null }),
        keyMigrations: new Map([
          ["mig_legacy", "sha256"],
          ["mig_seam", "github.com/seamapi/prefixed-api-key"],
        ]),
        metrics: { port: 9464, token: "scrape_0123456789abcdef" },
        audit: { retentionDays: 30 },
        clockOffsetMs: -150,
      },
    });
  });

  it("reports an invalid KEYRAFT_KEY_MIGRATIONS by name", () => {
    for (const raw of ["{", "[]", '"sha256"', '{"mig_legacy":"md5"}', '{"x":"sha256"}', '{"mig_legacy":1}']) {
      const result = parseConfig({ KEYRAFT_KEY_MIGRATIONS: raw }, cwd);
      expect(result.ok, raw).toBe(false);
      if (!result.ok) expect(result.errors[0]).toMatch(/^KEYRAFT_KEY_MIGRATIONS/);
    }
  });

  it("checks the metrics port and token and the audit retention, never echoing a rejected token", () => {
    const result = parseConfig(
      { KEYRAFT_METRICS_PORT: "65536", KEYRAFT_METRICS_TOKEN: "short secret", KEYRAFT_AUDIT_RETENTION_DAYS: "0" },
      cwd,
    );
    expect(result.ok).toBe(false);
    const errors = result.ok ? [] : result.errors;
    expect(errors.map((error) => error.split(/[= ]/)[0])).toEqual([
      "KEYRAFT_METRICS_PORT",
      "KEYRAFT_METRICS_TOKEN",
      "KEYRAFT_AUDIT_RETENTION_DAYS",
    ]);
    expect(errors.join("\n")).not.toContain("short secret");
    const edge = parseConfig({ KEYRAFT_AUDIT_RETENTION_DAYS: "3650", KEYRAFT_METRICS_PORT: "0" }, cwd);
    expect(edge.ok && edge.config.audit.retentionDays).toBe(3650);
    expect(edge.ok && edge.config.metrics.port).toBe(0);
  });

  it("reports invalid rate-limit knobs as configuration errors, each by name", () => {
    const result = parseConfig(
      { KEYRAFT_RATELIMIT_RECONCILE_MS: "0", KEYRAFT_RATELIMIT_FORWARD_DELAY_MS: "soon" },
      cwd,
    );
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.errors.some((error) => error.startsWith("KEYRAFT_RATELIMIT_RECONCILE_MS"))).toBe(true);
      expect(result.errors.some((error) => error.startsWith("KEYRAFT_RATELIMIT_FORWARD_DELAY_MS"))).toBe(true);
    }
    const tooClose = parseConfig({ KEYRAFT_RATELIMIT_RECONCILE_MS: "600", KEYRAFT_RATELIMIT_SUSPECT_MS: "1000" }, cwd);
    expect(tooClose.ok ? [] : tooClose.errors).toEqual([expect.stringMatching(/must exceed twice/)]);
  });

  it("resolves a relative data dir against cwd", () => {
    const result = parseConfig({ KEYRAFT_DATA_DIR: "state/node1" }, cwd);
    expect(result.ok && result.config.dataDir).toBe("/srv/keyraft/state/node1");
  });

  it.each([
    ["PORT", "http", /PORT="http" is invalid: expected an integer from 0 to 65535/],
    ["PORT", "65536", /PORT="65536" is out of range/],
    ["PORT", "-1", /PORT="-1" is invalid/],
    ["PORT", "", /PORT="" is invalid/],
    ["PORT", "80.5", /PORT="80.5" is invalid/],
    ["HOST", "", /HOST="" is invalid/],
    ["HOST", "http://x", /HOST="http:\/\/x" is invalid: expected an IP address or host name/],
    ["KEYRAFT_DATA_DIR", " ", /KEYRAFT_DATA_DIR=" " is invalid/],
    [
      "KEYRAFT_LOG_LEVEL",
      "verbose",
      /KEYRAFT_LOG_LEVEL="verbose" is invalid: expected one of fatal, error, warn, info, debug, trace, silent/,
    ],
    [
      "KEYRAFT_SNAPSHOT_EVERY",
      "0",
      /KEYRAFT_SNAPSHOT_EVERY="0" is out of range: expected an integer from 1 to 10000000/,
    ],
    ["KEYRAFT_BODY_LIMIT_BYTES", "1023", /KEYRAFT_BODY_LIMIT_BYTES="1023" is out of range/],
    ["KEYRAFT_WRITE_QUEUE_MAX", "1000001", /KEYRAFT_WRITE_QUEUE_MAX="1000001" is out of range/],
    ["KEYRAFT_SHUTDOWN_TIMEOUT_MS", "1e3", /KEYRAFT_SHUTDOWN_TIMEOUT_MS="1e3" is invalid/],
  ])("rejects %s=%j with a message naming it and what it accepts", (name, value, message) => {
    const result = parseConfig({ [name]: value }, cwd);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toMatch(message);
  });

  it("checks each integer variable at its bounds and one past them", () => {
    for (const variable of Object.values(integerVariables)) {
      for (const value of [variable.min, variable.max])
        expect(parseConfig({ [variable.name]: String(value) }, cwd).ok).toBe(true);
      expect(parseConfig({ [variable.name]: String(variable.max + 1) }, cwd).ok).toBe(false);
      if (variable.min > 0) expect(parseConfig({ [variable.name]: String(variable.min - 1) }, cwd).ok).toBe(false);
    }
  });

  it("accepts a root key of 16 to 256 printable characters and never echoes a rejected one", () => {
    expect(parseConfig({ KEYRAFT_ROOT_KEY: "a".repeat(16) }, cwd).ok).toBe(true);
    expect(parseConfig({ KEYRAFT_ROOT_KEY: "a".repeat(256) }, cwd).ok).toBe(true);
    for (const bad of [
      "",
      "a".repeat(15),
      "a".repeat(257),
      "secret with spaces!",
      "secret\u00e9secret\u00e9secret",
      "abcdefghijklmnop\n",
    ]) {
      const result = parseConfig({ KEYRAFT_ROOT_KEY: bad }, cwd);
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      expect(result.errors[0]).toMatch(
        /^KEYRAFT_ROOT_KEY is invalid \(\d+ characters\): expected 16 to 256 printable ASCII/,
      );
      if (bad.length > 0) expect(result.errors[0]).not.toContain(bad.trim());
    }
  });

  it("reports every invalid variable at once", () => {
    const result = parseConfig({ PORT: "x", KEYRAFT_LOG_LEVEL: "loud", HOST: "" }, cwd);
    expect(result.ok).toBe(false);
    if (!result.ok)
      expect(result.errors.map((error) => error.split(/[= ]/)[0])).toEqual(["PORT", "HOST", "KEYRAFT_LOG_LEVEL"]);
  });
});

const secret = "s".repeat(32);
const threePeers = "n1=10.0.0.1:7001, n2=10.0.0.2:7001,n3=[fd00::3]:7003";

describe("parseConfig: the cluster", () => {
  it("reads the members, the secret and every cluster knob", () => {
    const result = parseConfig(
      {
        KEYRAFT_NODE_ID: "n2",
        KEYRAFT_PEERS: threePeers,
        KEYRAFT_CLUSTER_SECRET: secret,
        KEYRAFT_MAX_STALENESS_MS: "1500",
        KEYRAFT_STALE_POLICY: "Serve",
        KEYRAFT_RAFT_TICK_MS: "10",
        KEYRAFT_RAFT_ELECTION_TICKS: "20",
        KEYRAFT_RAFT_HEARTBEAT_TICKS: "3",
        KEYRAFT_RAFT_KEEP_ENTRIES: "0",
        KEYRAFT_RAFT_KEEP_BYTES: "4096",
        KEYRAFT_RAFT_SNAPSHOT_PIECE_BYTES: "65536",
        KEYRAFT_REQUEST_TIMEOUT_MS: "2000",
        KEYRAFT_JOIN: "true",
        KEYRAFT_RAFT_LISTEN_HOST: "0.0.0.0",
      },
      cwd,
    );
    expect(result.ok).toBe(true);
    if (!result.ok) return;
    expect(result.config.cluster).toEqual({
      nodeId: "n2",
      peers: [
        { id: "n1", host: "10.0.0.1", port: 7001 },
        { id: "n2", host: "10.0.0.2", port: 7001 },
        { id: "n3", host: "fd00::3", port: 7003 },
      ],
      peersConfigured: true,
      secret,
      previousSecret: null,
      tls: null,
      join: true,
      raftListenHost: "0.0.0.0",
      maxStalenessMs: 1500,
      stalePolicy: "serve",
      tickMs: 10,
      electionTicks: 20,
      heartbeatTicks: 3,
      keepEntries: 0,
      keepBytes: 4096,
      snapshotPieceBytes: 65536,
      requestTimeoutMs: 2000,
    });
  });

  it("binds the raft port on this node's host from KEYRAFT_PEERS by default", () => {
    const result = parseConfig(
      { KEYRAFT_NODE_ID: "n1", KEYRAFT_PEERS: threePeers, KEYRAFT_CLUSTER_SECRET: secret },
      cwd,
    );
    expect(result.ok && result.config.cluster.raftListenHost).toBe("10.0.0.1");
  });

  it("accepts a one-member KEYRAFT_PEERS without a secret", () => {
    const result = parseConfig({ KEYRAFT_NODE_ID: "solo", KEYRAFT_PEERS: "solo=127.0.0.1:7100" }, cwd);
    expect(result.ok && result.config.cluster).toMatchObject({
      nodeId: "solo",
      peers: [{ id: "solo", host: "127.0.0.1", port: 7100 }],
      secret: null,
      peersConfigured: true,
    });
  });

  it.each([
    [
      { KEYRAFT_NODE_ID: "n9", KEYRAFT_PEERS: threePeers, KEYRAFT_CLUSTER_SECRET: secret },
      /KEYRAFT_PEERS does not list this node \(KEYRAFT_NODE_ID="n9"\)/,
    ],
    [
      { KEYRAFT_NODE_ID: "n1", KEYRAFT_PEERS: threePeers },
      /KEYRAFT_CLUSTER_SECRET is required when KEYRAFT_PEERS lists more than one node/,
    ],
    [
      { KEYRAFT_NODE_ID: "n1", KEYRAFT_PEERS: "n1=a:1,n1=b:2", KEYRAFT_CLUSTER_SECRET: secret },
      /node id "n1" appears twice/,
    ],
    [
      { KEYRAFT_NODE_ID: "n1", KEYRAFT_PEERS: "n1=a", KEYRAFT_CLUSTER_SECRET: secret },
      /KEYRAFT_PEERS: "n1=a" is invalid: expected id=host:raftPort/,
    ],
    [{ KEYRAFT_NODE_ID: "n1", KEYRAFT_PEERS: "n1=a:70000" }, /KEYRAFT_PEERS: "n1=a:70000" is invalid/],
    [{ KEYRAFT_NODE_ID: "n1", KEYRAFT_PEERS: "" }, /KEYRAFT_PEERS="" is invalid/],
    [{ KEYRAFT_NODE_ID: "bad id" }, /KEYRAFT_NODE_ID="bad id" is invalid/],
    [{ KEYRAFT_STALE_POLICY: "maybe" }, /KEYRAFT_STALE_POLICY="maybe" is invalid: expected refuse or serve/],
    [{ KEYRAFT_JOIN: "perhaps" }, /KEYRAFT_JOIN="perhaps" is invalid: expected true or false/],
    [
      { KEYRAFT_RAFT_HEARTBEAT_TICKS: "10" },
      /KEYRAFT_RAFT_HEARTBEAT_TICKS=10 must be smaller than KEYRAFT_RAFT_ELECTION_TICKS=10/,
    ],
    [{ KEYRAFT_MAX_STALENESS_MS: "99" }, /KEYRAFT_MAX_STALENESS_MS="99" is out of range/],
  ])("rejects %j", (env, message) => {
    const result = parseConfig(env, cwd);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.join("\n")).toMatch(message);
  });

  it("never echoes a rejected cluster secret", () => {
    for (const bad of ["short-secret", "x".repeat(31), "a secret with spaces in it, long enough!"]) {
      const result = parseConfig(
        { KEYRAFT_NODE_ID: "n1", KEYRAFT_PEERS: threePeers, KEYRAFT_CLUSTER_SECRET: bad },
        cwd,
      );
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      expect(result.errors.join("\n")).toMatch(/KEYRAFT_CLUSTER_SECRET is invalid \(\d+ characters\)/);
      expect(result.errors.join("\n")).not.toContain(bad);
    }
  });

  it("checks each cluster integer variable at its bounds and one past them", () => {
    for (const variable of Object.values(clusterIntegerVariables)) {
      const env = (value: number) => ({
        [variable.name]: String(value),
        KEYRAFT_RAFT_ELECTION_TICKS: "1000",
        KEYRAFT_RAFT_HEARTBEAT_TICKS: "1",
      });
      for (const value of [variable.min, variable.max]) {
        const base = env(value);
        if (variable.name === "KEYRAFT_RAFT_HEARTBEAT_TICKS") base["KEYRAFT_RAFT_ELECTION_TICKS"] = "1000";
        if (variable.name === "KEYRAFT_RAFT_ELECTION_TICKS") base["KEYRAFT_RAFT_HEARTBEAT_TICKS"] = "1";
        base[variable.name] = String(value);
        expect(parseConfig(base, cwd).ok, `${variable.name}=${value}`).toBe(true);
      }
      expect(parseConfig({ [variable.name]: String(variable.max + 1) }, cwd).ok).toBe(false);
      if (variable.min > 0) expect(parseConfig({ [variable.name]: String(variable.min - 1) }, cwd).ok).toBe(false);
    }
  });
});
