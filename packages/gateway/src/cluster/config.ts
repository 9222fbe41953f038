// Cluster configuration from the environment: who this node is, who its peers are, the shared
// secret, the staleness bound and the Raft timing. Pure, like parseConfig: every problem is
// reported, naming the variable and what it accepts; the secret is never echoed.

/** Address of one member's Raft (cluster) port. */
export interface PeerAddress {
  id: string;
  host: string;
  port: number;
}

export const stalePolicies = ["refuse", "serve"] as const;
export type StalePolicy = (typeof stalePolicies)[number];

export interface ClusterConfig {
  /** This node's id (KEYRAFT_NODE_ID). */
  nodeId: string;
  /** Every member, this node included. A single entry without KEYRAFT_PEERS: a one-member cluster. */
  peers: PeerAddress[];
  /** Whether KEYRAFT_PEERS was given (false: a one-member cluster on loopback, any free raft port). */
  peersConfigured: boolean;
  /** Shared secret of the cluster connections; null only for a one-member cluster. Never logged. */
  secret: string | null;
  /** KEYRAFT_CLUSTER_SECRET_PREVIOUS: also accepted during a rotation (transport/handshake.ts). Never logged. */
  previousSecret: string | null;
  /**
   * KEYRAFT_CLUSTER_TLS_CERT_FILE, _KEY_FILE and _CA_FILE (PEM): mutual TLS between the nodes,
   * each verifying the others' certificates against the CA. All three or none.
   */
  tls: { certFile: string; keyFile: string; caFile: string } | null;
  /** Join an existing cluster (wait to be added) instead of founding one with `peers` as voters. */
  join: boolean;
  /** Interface the Raft port binds (default: this node's host from KEYRAFT_PEERS). */
  raftListenHost: string;
  maxStalenessMs: number;
  stalePolicy: StalePolicy;
  tickMs: number;
  electionTicks: number;
  heartbeatTicks: number;
  /** Log entries kept behind a snapshot, so a slightly slow follower catches up from the log. */
  keepEntries: number;
  /** Of those, only as many as fit in this many bytes: a bulk import's large entries are not kept in memory. */
  keepBytes: number;
  /** A snapshot larger than this is stored as piece files of this size (LevelStorage). */
  snapshotPieceBytes: number;
  /** Deadline of an admin write (proposal, forwarding, waiting for the local apply). */
  requestTimeoutMs: number;
}

/** KEYRAFT_CLUSTER_SECRET: at least this many characters (the transport's floor is 16 bytes). */
export const clusterSecretLengthMin = 32;
export const clusterSecretLengthMax = 1024;
export const peersMax = 64;
const nodeIdPattern = /^[A-Za-z0-9_-]{1,64}$/;

interface IntegerVariable {
  name: string;
  defaultValue: number;
  min: number;
  max: number;
}

export const clusterIntegerVariables = {
  maxStalenessMs: { name: "KEYRAFT_MAX_STALENESS_MS", defaultValue: 30_000, min: 100, max: 86_400_000 },
  tickMs: { name: "KEYRAFT_RAFT_TICK_MS", defaultValue: 20, min: 1, max: 10_000 },
  electionTicks: { name: "KEYRAFT_RAFT_ELECTION_TICKS", defaultValue: 10, min: 3, max: 1000 },
  heartbeatTicks: { name: "KEYRAFT_RAFT_HEARTBEAT_TICKS", defaultValue: 2, min: 1, max: 999 },
  keepEntries: { name: "KEYRAFT_RAFT_KEEP_ENTRIES", defaultValue: 1000, min: 0, max: 10_000_000 },
  keepBytes: { name: "KEYRAFT_RAFT_KEEP_BYTES", defaultValue: 16 * 1_048_576, min: 0, max: 4096 * 1_048_576 },
  snapshotPieceBytes: {
    name: "KEYRAFT_RAFT_SNAPSHOT_PIECE_BYTES",
    defaultValue: 4 * 1_048_576,
    min: 4096,
    max: 256 * 1_048_576,
  },
  requestTimeoutMs: { name: "KEYRAFT_REQUEST_TIMEOUT_MS", defaultValue: 5000, min: 100, max: 600_000 },
} as const satisfies Record<string, IntegerVariable>;

export const clusterDefaults = { nodeId: "n1", stalePolicy: "refuse" as StalePolicy, singleNodeRaftHost: "127.0.0.1" };

export function parseClusterConfig(
  env: Readonly<Record<string, string | undefined>>,
  errors: string[],
  integer: (variable: IntegerVariable) => number,
): ClusterConfig {
  const nodeId = parseNodeId(env["KEYRAFT_NODE_ID"], errors);
  const peersRaw = env["KEYRAFT_PEERS"];
  const peersConfigured = peersRaw !== undefined;
  const peers = peersConfigured
    ? parsePeers(peersRaw, nodeId, errors)
    : [{ id: nodeId, host: clusterDefaults.singleNodeRaftHost, port: 0 }];
  const secret = parseSecret(env["KEYRAFT_CLUSTER_SECRET"], peers.length, errors);
  const previousSecret =
    env["KEYRAFT_CLUSTER_SECRET_PREVIOUS"] === undefined
      ? null
      : parseSecret(env["KEYRAFT_CLUSTER_SECRET_PREVIOUS"], peers.length, errors, "KEYRAFT_CLUSTER_SECRET_PREVIOUS");
  if (previousSecret !== null && secret === null)
    errors.push("KEYRAFT_CLUSTER_SECRET_PREVIOUS needs KEYRAFT_CLUSTER_SECRET (the secret it is rotated to)");
  const tls = parseClusterTls(env, errors);
  const self = peers.find((peer) => peer.id === nodeId);
  const raftListenHost = parseListenHost(
    env["KEYRAFT_RAFT_LISTEN_HOST"],
    self?.host ?? clusterDefaults.singleNodeRaftHost,
    errors,
  );
  const join = parseBoolean(env["KEYRAFT_JOIN"], "KEYRAFT_JOIN", errors);
  const electionTicks = integer(clusterIntegerVariables.electionTicks);
  const heartbeatTicks = integer(clusterIntegerVariables.heartbeatTicks);
  if (heartbeatTicks >= electionTicks) {
    errors.push(
      `KEYRAFT_RAFT_HEARTBEAT_TICKS=${heartbeatTicks} must be smaller than KEYRAFT_RAFT_ELECTION_TICKS=${electionTicks}`,
    );
  }
  return {
    nodeId,
    peers,
    peersConfigured,
    secret,
    previousSecret,
    tls,
    join,
    raftListenHost,
    maxStalenessMs: integer(clusterIntegerVariables.maxStalenessMs),
    stalePolicy: parseStalePolicy(env["KEYRAFT_STALE_POLICY"], errors),
    tickMs: integer(clusterIntegerVariables.tickMs),
    electionTicks,
    heartbeatTicks,
    keepEntries: integer(clusterIntegerVariables.keepEntries),
    keepBytes: integer(clusterIntegerVariables.keepBytes),
    snapshotPieceBytes: integer(clusterIntegerVariables.snapshotPieceBytes),
    requestTimeoutMs: integer(clusterIntegerVariables.requestTimeoutMs),
  };
}

export function isNodeId(value: string): boolean {
  return nodeIdPattern.test(value);
}

function parseNodeId(raw: string | undefined, errors: string[]): string {
  if (raw === undefined) return clusterDefaults.nodeId;
  if (!isNodeId(raw.trim())) {
    errors.push(
      `KEYRAFT_NODE_ID=${JSON.stringify(raw)} is invalid: expected 1 to 64 letters, digits, "_" or "-" (default ${clusterDefaults.nodeId})`,
    );
    return clusterDefaults.nodeId;
  }
  return raw.trim();
}

/** `host:port`, `[v6]:port`; null when malformed. */
export function parseHostPort(text: string): { host: string; port: number } | null {
  const match = /^(?:\[([0-9A-Fa-f:.%]+)\]|([A-Za-z0-9._-]+)):([0-9]{1,5})$/.exec(text.trim());
  if (match === null) return null;
  const port = Number(match[3]);
  if (port < 1 || port > 65_535) return null;
  return { host: match[1] ?? match[2] ?? "", port };
}

/** The URL the transport dials for a member. */
export function peerUrl(peer: { host: string; port: number }): string {
  return `ws://${peer.host.includes(":") ? `[${peer.host}]` : peer.host}:${peer.port}`;
}

function parsePeers(raw: string, nodeId: string, errors: string[]): PeerAddress[] {
  const fallback = [{ id: nodeId, host: clusterDefaults.singleNodeRaftHost, port: 0 }];
  const accepted =
    'a comma list of id=host:raftPort, this node included, e.g. "n1=10.0.0.1:7001,n2=10.0.0.2:7001,n3=10.0.0.3:7001"';
  const items = raw
    .split(",")
    .map((item) => item.trim())
    .filter((item) => item.length > 0);
  if (items.length === 0 || items.length > peersMax) {
    errors.push(`KEYRAFT_PEERS=${JSON.stringify(raw)} is invalid: expected ${accepted} (1 to ${peersMax} members)`);
    return fallback;
  }
  const peers: PeerAddress[] = [];
  for (const item of items) {
    const equals = item.indexOf("=");
    const id = equals < 0 ? "" : item.slice(0, equals).trim();
    const address = equals < 0 ? null : parseHostPort(item.slice(equals + 1));
    if (!isNodeId(id) || address === null) {
      errors.push(
        `KEYRAFT_PEERS: ${JSON.stringify(item)} is invalid: expected id=host:raftPort (port 1..65535); KEYRAFT_PEERS takes ${accepted}`,
      );
      return fallback;
    }
    if (peers.some((peer) => peer.id === id)) {
      errors.push(`KEYRAFT_PEERS: node id ${JSON.stringify(id)} appears twice`);
      return fallback;
    }
    peers.push({ id, ...address });
  }
  if (!peers.some((peer) => peer.id === nodeId)) {
    errors.push(
      `KEYRAFT_PEERS does not list this node (KEYRAFT_NODE_ID=${JSON.stringify(nodeId)}): include it, e.g. "${nodeId}=host:raftPort"`,
    );
    return fallback;
  }
  return peers;
}

function parseSecret(
  raw: string | undefined,
  memberCount: number,
  errors: string[],
  name = "KEYRAFT_CLUSTER_SECRET",
): string | null {
  // Never echo the value: it is the cluster's only credential.
  if (raw === undefined) {
    if (memberCount > 1)
      errors.push(
        `${name} is required when KEYRAFT_PEERS lists more than one node: ` +
          `${clusterSecretLengthMin} to ${clusterSecretLengthMax} characters, the same on every node (e.g. openssl rand -hex 32)`,
      );
    return null;
  }
  if (raw.length < clusterSecretLengthMin || raw.length > clusterSecretLengthMax || /\s/.test(raw)) {
    errors.push(
      `${name} is invalid (${raw.length} characters): expected ${clusterSecretLengthMin} to ` +
        `${clusterSecretLengthMax} characters without whitespace (e.g. openssl rand -hex 32)`,
    );
    return null;
  }
  return raw;
}

const clusterTlsVariables = [
  "KEYRAFT_CLUSTER_TLS_CERT_FILE",
  "KEYRAFT_CLUSTER_TLS_KEY_FILE",
  "KEYRAFT_CLUSTER_TLS_CA_FILE",
] as const;

function parseClusterTls(env: Readonly<Record<string, string | undefined>>, errors: string[]): ClusterConfig["tls"] {
  const [certFile, keyFile, caFile] = clusterTlsVariables.map((name) => env[name]);
  if (certFile === undefined && keyFile === undefined && caFile === undefined) return null;
  if ([certFile, keyFile, caFile].some((file) => file === undefined || file.trim() === "")) {
    errors.push(`${clusterTlsVariables.join(", ")} go together: set all three to PEM files, or none`);
    return null;
  }
  return { certFile: certFile!, keyFile: keyFile!, caFile: caFile! };
}

function parseListenHost(raw: string | undefined, fallback: string, errors: string[]): string {
  if (raw === undefined) return fallback;
  const host = raw.trim();
  if (host.length === 0 || host.length > 253 || !/^[A-Za-z0-9.:%_-]+$/.test(host)) {
    errors.push(
      `KEYRAFT_RAFT_LISTEN_HOST=${JSON.stringify(raw)} is invalid: expected an IP address or host name such as 0.0.0.0 ` +
        "(default: this node's host in KEYRAFT_PEERS)",
    );
    return fallback;
  }
  return host;
}

function parseStalePolicy(raw: string | undefined, errors: string[]): StalePolicy {
  if (raw === undefined) return clusterDefaults.stalePolicy;
  const policy = stalePolicies.find((candidate) => candidate === raw.trim().toLowerCase());
  if (policy === undefined) {
    errors.push(
      `KEYRAFT_STALE_POLICY=${JSON.stringify(raw)} is invalid: expected refuse or serve (default ${clusterDefaults.stalePolicy})`,
    );
    return clusterDefaults.stalePolicy;
  }
  return policy;
}

function parseBoolean(raw: string | undefined, name: string, errors: string[]): boolean {
  if (raw === undefined) return false;
  const value = raw.trim().toLowerCase();
  if (value === "1" || value === "true" || value === "yes") return true;
  if (value === "0" || value === "false" || value === "no" || value === "") return false;
  errors.push(`${name}=${JSON.stringify(raw)} is invalid: expected true or false (default false)`);
  return false;
}
