// The node's configuration, read from the environment once at start. `parseConfig` is pure:
// it reads only the object it is given, and reports every problem, each naming the variable and
// what it accepts, so a bad start fails with one clear line per mistake (main exits with code 2).
import { resolve } from "node:path";
import { parseClusterConfig, type ClusterConfig } from "./cluster/config.js";
import { parseCreditLeaseConfig, type CreditLeaseConfig } from "./counters/credits/config.js";
import { parseRateLimitClusterConfig, type RateLimitClusterConfig } from "./counters/ratelimit/config.js";
import { parseHttpServerConfig, type HttpServerConfig } from "./http-server.js";
import { keyMigrationsVariable, parseKeyMigrations, type KeyMigrations } from "./key-migrations.js";
import { parseMetricsConfig, type MetricsConfig } from "./metrics/config.js";
import { parseAuditConfig, type AuditConfig } from "./audit/config.js";

export const logLevels = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof logLevels)[number];

/** Bounds of KEYRAFT_ROOT_KEY: long enough not to be guessed, and only characters that survive an HTTP header unchanged. */
export const rootKeyLengthMin = 16;
export const rootKeyLengthMax = 256;
const rootKeyPattern = /^[\x21-\x7e]+$/;

export interface Config {
  /** TCP port to listen on (0: any free port). */
  port: number;
  /** Interface to bind; 127.0.0.1 keeps the node off the network until asked. */
  host: string;
  /** Absolute path of the LevelDB directory (created when missing). */
  dataDir: string;
  /** A root key to ensure exists (holding `*`), or null to generate one on the first start. */
  rootKey: string | null;
  logLevel: LogLevel;
  /** Snapshot the key state (and compact the command log) every this many commands. */
  snapshotEveryEntries: number;
  /** Also snapshot once the entries since the last snapshot carry this many bytes (0: never by bytes). */
  snapshotEveryBytes: number;
  /** Largest request body accepted, in bytes; larger bodies get 413 with the v1 error body. */
  bodyLimitBytes: number;
  /** Most admin writes waiting for the disk before new ones are refused (503). */
  writeQueueEntriesMax: number;
  /** How long SIGTERM waits for in-flight requests before the process exits anyway. */
  shutdownTimeoutMs: number;
  /** The cluster: membership, secret, staleness bound and Raft timing (see cluster-config.ts). */
  cluster: ClusterConfig;
  /** Credit leases: lease ttl, clock drift bound, lease size (counters/credits/config.ts). */
  credits: CreditLeaseConfig;
  /** Rate limits across the cluster: beat period, suspicion, timeouts (counters/ratelimit/config.ts). */
  rateLimits: RateLimitClusterConfig;
  /** The API's HTTP server: timeouts, connection cap, TLS (http-server.ts). */
  http: HttpServerConfig;
  /** Key migrations declared for v2 keys.migrateKeys (key-migrations.ts); empty when unset. */
  keyMigrations: KeyMigrations;
  /** GET /metrics: its port and token (metrics/config.ts). */
  metrics: MetricsConfig;
  /** The audit log's retention (audit/config.ts). */
  audit: AuditConfig;
  /**
   * Added to the wall clock for everything this node times (rate-limit windows, command times,
   * refills): a clock skew without changing the machine's clock, for fault testing. Default 0.
   */
  clockOffsetMs: number;
}

export type ConfigResult = { ok: true; config: Config } | { ok: false; errors: string[] };

export interface IntegerVariable {
  name: string;
  defaultValue: number;
  min: number;
  max: number;
}

export const integerVariables = {
  port: { name: "PORT", defaultValue: 8080, min: 0, max: 65_535 },
  snapshotEveryEntries: { name: "KEYRAFT_SNAPSHOT_EVERY", defaultValue: 10_000, min: 1, max: 10_000_000 },
  snapshotEveryBytes: {
    name: "KEYRAFT_SNAPSHOT_EVERY_BYTES",
    defaultValue: 64 * 1_048_576,
    min: 0,
    max: 4096 * 1_048_576,
  },
  bodyLimitBytes: { name: "KEYRAFT_BODY_LIMIT_BYTES", defaultValue: 1_048_576, min: 1024, max: 64 * 1_048_576 },
  writeQueueEntriesMax: { name: "KEYRAFT_WRITE_QUEUE_MAX", defaultValue: 10_000, min: 1, max: 1_000_000 },
  shutdownTimeoutMs: { name: "KEYRAFT_SHUTDOWN_TIMEOUT_MS", defaultValue: 10_000, min: 0, max: 600_000 },
} as const satisfies Record<string, IntegerVariable>;

export type { ClusterConfig, PeerAddress, StalePolicy } from "./cluster/config.js";

export const configDefaults = { host: "127.0.0.1", dataDir: "./data", logLevel: "info" as LogLevel };

/**
 * Reads the configuration from `env`. A variable that is unset takes its default; one that is
 * set (even to the empty string) must be valid. `cwd` resolves a relative KEYRAFT_DATA_DIR.
 */
export function parseConfig(
  env: Readonly<Record<string, string | undefined>>,
  cwd: string = process.cwd(),
): ConfigResult {
  const errors: string[] = [];
  const integer = (variable: IntegerVariable): number => parseInteger(env[variable.name], variable, errors);
  const config: Config = {
    port: integer(integerVariables.port),
    host: parseHost(env["HOST"], errors),
    dataDir: parseDataDir(env["KEYRAFT_DATA_DIR"], cwd, errors),
    rootKey: parseRootKey(env["KEYRAFT_ROOT_KEY"], errors),
    logLevel: parseLogLevel(env["KEYRAFT_LOG_LEVEL"], errors),
    snapshotEveryEntries: integer(integerVariables.snapshotEveryEntries),
    snapshotEveryBytes: integer(integerVariables.snapshotEveryBytes),
    bodyLimitBytes: integer(integerVariables.bodyLimitBytes),
    writeQueueEntriesMax: integer(integerVariables.writeQueueEntriesMax),
    shutdownTimeoutMs: integer(integerVariables.shutdownTimeoutMs),
    cluster: parseClusterConfig(env, errors, integer),
    credits: parseCreditLeaseConfig(env, errors),
    rateLimits: parseRateLimitClusterConfig(env, errors),
    http: parseHttpServerConfig(env, errors, integer),
    keyMigrations: parseKeyMigrations(env[keyMigrationsVariable], errors),
    metrics: parseMetricsConfig(env, errors, integer),
    audit: parseAuditConfig(integer),
    clockOffsetMs: parseClockOffset(env[clockOffsetVariable], errors),
  };
  return errors.length === 0 ? { ok: true, config } : { ok: false, errors };
}

export const clockOffsetVariable = "KEYRAFT_CLOCK_OFFSET_MS";
/** Bound of KEYRAFT_CLOCK_OFFSET_MS either way. */
export const clockOffsetMsMax = 600_000;

function parseClockOffset(raw: string | undefined, errors: string[]): number {
  if (raw === undefined) return 0;
  const value = Number(raw.trim());
  if (!/^-?[0-9]+$/.test(raw.trim()) || !Number.isSafeInteger(value) || Math.abs(value) > clockOffsetMsMax) {
    errors.push(
      `${clockOffsetVariable}=${JSON.stringify(raw)} is invalid: expected an integer from -${clockOffsetMsMax} to ${clockOffsetMsMax} (default 0)`,
    );
    return 0;
  }
  return value;
}

export function parseInteger(raw: string | undefined, variable: IntegerVariable, errors: string[]): number {
  if (raw === undefined) return variable.defaultValue;
  const accepted = `an integer from ${variable.min} to ${variable.max} (default ${variable.defaultValue})`;
  if (!/^[0-9]+$/.test(raw.trim())) {
    errors.push(`${variable.name}=${JSON.stringify(raw)} is invalid: expected ${accepted}`);
    return variable.defaultValue;
  }
  const value = Number(raw.trim());
  if (!Number.isSafeInteger(value) || value < variable.min || value > variable.max) {
    errors.push(`${variable.name}=${JSON.stringify(raw)} is out of range: expected ${accepted}`);
    return variable.defaultValue;
  }
  return value;
}

function parseHost(raw: string | undefined, errors: string[]): string {
  if (raw === undefined) return configDefaults.host;
  const host = raw.trim();
  // A hostname or an IPv4/IPv6 literal: no spaces, no scheme, no port.
  if (host.length === 0 || host.length > 253 || !/^[A-Za-z0-9.:%_-]+$/.test(host)) {
    errors.push(
      `HOST=${JSON.stringify(raw)} is invalid: expected an IP address or host name such as 127.0.0.1, 0.0.0.0 or :: (default ${configDefaults.host})`,
    );
    return configDefaults.host;
  }
  return host;
}

function parseDataDir(raw: string | undefined, cwd: string, errors: string[]): string {
  if (raw === undefined) return resolve(cwd, configDefaults.dataDir);
  if (raw.trim().length === 0 || raw.includes("\0")) {
    errors.push(
      `KEYRAFT_DATA_DIR=${JSON.stringify(raw)} is invalid: expected a directory path (default ${configDefaults.dataDir})`,
    );
    return resolve(cwd, configDefaults.dataDir);
  }
  return resolve(cwd, raw);
}

function parseRootKey(raw: string | undefined, errors: string[]): string | null {
  if (raw === undefined) return null;
  // Never echo the value: it is a secret, and the message may end up in a log.
  if (raw.length < rootKeyLengthMin || raw.length > rootKeyLengthMax || !rootKeyPattern.test(raw)) {
    errors.push(
      `KEYRAFT_ROOT_KEY is invalid (${raw.length} characters): expected ${rootKeyLengthMin} to ${rootKeyLengthMax} ` +
        "printable ASCII characters without spaces, or leave it unset to generate one",
    );
    return null;
  }
  return raw;
}

function parseLogLevel(raw: string | undefined, errors: string[]): LogLevel {
  if (raw === undefined) return configDefaults.logLevel;
  const level = logLevels.find((candidate) => candidate === raw.trim().toLowerCase());
  if (level === undefined) {
    errors.push(
      `KEYRAFT_LOG_LEVEL=${JSON.stringify(raw)} is invalid: expected one of ${logLevels.join(", ")} (default ${configDefaults.logLevel})`,
    );
    return configDefaults.logLevel;
  }
  return level;
}
