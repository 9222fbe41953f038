// The node's pino logger. Structured JSON to stdout, with every place a secret can appear
// redacted: the Authorization header (root keys), `key` fields of request bodies (verifyKey's
// plaintext), root keys, the cluster secret, and plaintext keys returned by createKey.
import { pino, type DestinationStream, type Logger } from "pino";
import type { LogLevel } from "./config.js";

/** Paths pino censors, at the top level and one or two levels down (pino paths do not recurse). */
export const redactPaths: readonly string[] = [
  "req.headers.authorization",
  'req.headers["x-cluster-secret"]',
  "headers.authorization",
  "authorization",
  "key",
  "*.key",
  "*.*.key",
  "rootKey",
  "*.rootKey",
  "*.*.rootKey",
  "secret",
  "*.secret",
  "*.*.secret",
  "clusterSecret",
  "*.clusterSecret",
  "plaintext",
  "*.plaintext",
  "*.*.plaintext",
];

export const redactedText = "[redacted]";

export interface LoggerOptions {
  level: LogLevel;
  /** Where to write; stdout when absent (tests pass a stream to read what was logged). */
  destination?: DestinationStream;
}

export function createLogger(options: LoggerOptions): Logger {
  const pinoOptions = {
    level: options.level,
    base: { service: "keyraft" },
    redact: { paths: [...redactPaths], censor: redactedText },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return options.destination === undefined ? pino(pinoOptions) : pino(pinoOptions, options.destination);
}
