// The API's HTTP server: its timeouts, its connection cap and, when configured, TLS. Every knob
// is an environment variable (docs/operations.md); the defaults bound what one slow or idle client
// can hold: a request must arrive whole within KEYRAFT_HTTP_REQUEST_TIMEOUT_MS (slow bodies), its
// headers within KEYRAFT_HTTP_HEADERS_TIMEOUT_MS (slow headers), an idle keep-alive connection is
// closed after KEYRAFT_HTTP_KEEP_ALIVE_TIMEOUT_MS, any connection silent for
// KEYRAFT_HTTP_CONNECTION_TIMEOUT_MS is dropped, and at most KEYRAFT_HTTP_CONNECTIONS_MAX are open
// at once (more are closed on arrival).
import { readFileSync } from "node:fs";
import { createServer as createHttpServer, type RequestListener, type Server, type ServerOptions } from "node:http";
import { createServer as createHttpsServer } from "node:https";

/** An integer variable (as config.ts reads them; declared here so the two files import one way). */
interface IntegerVariable {
  name: string;
  defaultValue: number;
  min: number;
  max: number;
}

export const httpIntegerVariables = {
  requestTimeoutMs: { name: "KEYRAFT_HTTP_REQUEST_TIMEOUT_MS", defaultValue: 30_000, min: 100, max: 600_000 },
  headersTimeoutMs: { name: "KEYRAFT_HTTP_HEADERS_TIMEOUT_MS", defaultValue: 10_000, min: 100, max: 600_000 },
  keepAliveTimeoutMs: { name: "KEYRAFT_HTTP_KEEP_ALIVE_TIMEOUT_MS", defaultValue: 10_000, min: 100, max: 600_000 },
  connectionTimeoutMs: { name: "KEYRAFT_HTTP_CONNECTION_TIMEOUT_MS", defaultValue: 60_000, min: 100, max: 3_600_000 },
  connectionsMax: { name: "KEYRAFT_HTTP_CONNECTIONS_MAX", defaultValue: 10_000, min: 1, max: 1_000_000 },
} as const satisfies Record<string, IntegerVariable>;

export interface HttpServerConfig {
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  connectionTimeoutMs: number;
  connectionsMax: number;
  /** KEYRAFT_TLS_CERT_FILE and KEYRAFT_TLS_KEY_FILE (PEM): HTTPS when set, plain HTTP when both are unset. */
  tls: { certFile: string; keyFile: string } | null;
}

/** How often Node checks requests against the request and headers timeouts (its default is 30 s). */
export const timeoutCheckIntervalMs = 250;

export function parseHttpServerConfig(
  env: Readonly<Record<string, string | undefined>>,
  errors: string[],
  integer: (variable: IntegerVariable) => number,
): HttpServerConfig {
  const config: HttpServerConfig = {
    requestTimeoutMs: integer(httpIntegerVariables.requestTimeoutMs),
    headersTimeoutMs: integer(httpIntegerVariables.headersTimeoutMs),
    keepAliveTimeoutMs: integer(httpIntegerVariables.keepAliveTimeoutMs),
    connectionTimeoutMs: integer(httpIntegerVariables.connectionTimeoutMs),
    connectionsMax: integer(httpIntegerVariables.connectionsMax),
    tls: null,
  };
  if (config.headersTimeoutMs > config.requestTimeoutMs) {
    errors.push(
      `${httpIntegerVariables.headersTimeoutMs.name} must not exceed ${httpIntegerVariables.requestTimeoutMs.name} (the headers are part of the request)`,
    );
  }
  config.tls = parseTlsFiles(env, "KEYRAFT_TLS_CERT_FILE", "KEYRAFT_TLS_KEY_FILE", errors);
  return config;
}

/** A certificate and key file pair: both set, or both unset (null). */
export function parseTlsFiles(
  env: Readonly<Record<string, string | undefined>>,
  certName: string,
  keyName: string,
  errors: string[],
): { certFile: string; keyFile: string } | null {
  const certFile = env[certName];
  const keyFile = env[keyName];
  if (certFile === undefined && keyFile === undefined) return null;
  if (certFile === undefined || keyFile === undefined || certFile.trim() === "" || keyFile.trim() === "") {
    errors.push(`${certName} and ${keyName} go together: set both to PEM files, or neither`);
    return null;
  }
  return { certFile, keyFile };
}

/**
 * A Fastify serverFactory building the configured server: HTTPS with the certificate and key
 * read now (a missing or unreadable file fails the start), or HTTP.
 */
export function serverFactory(config: HttpServerConfig): (handler: RequestListener) => Server {
  const tls =
    config.tls === null ? null : { cert: readFileSync(config.tls.certFile), key: readFileSync(config.tls.keyFile) };
  return (handler) => {
    const options: ServerOptions = {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout: config.headersTimeoutMs,
      keepAliveTimeout: config.keepAliveTimeoutMs,
      connectionsCheckingInterval: timeoutCheckIntervalMs,
    };
    const server =
      tls === null ? createHttpServer(options, handler) : createHttpsServer({ ...options, ...tls }, handler);
    server.setTimeout(config.connectionTimeoutMs);
    server.maxConnections = config.connectionsMax;
    return server;
  };
}
