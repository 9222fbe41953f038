// The node's pino logger. Structured JSON to stdout, with every place a secret can appear
// redacted: the Authorization header (root keys), `key` fields of request bodies (verifyKey's
// plaintext), root keys, the cluster secret, and plaintext keys returned by createKey.
import { pino, type Bindings, type ChildLoggerOptions, type DestinationStream, type Logger } from "pino";
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

type RequestLogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace";

/**
 * The logger Fastify hands every request (`request.log`), bound to its request id. A pino child
 * costs a few µs per request (its bindings are serialized and redacted) and a request that goes
 * well logs nothing, so the child is made on the first call at an enabled level. A route with its
 * own log level or serializers gets a real child at once.
 */
export class LazyRequestLogger {
  private real: Logger | null = null;

  constructor(
    private readonly parent: Logger,
    private readonly bindings: Bindings,
    private readonly options: ChildLoggerOptions,
  ) {}

  get level(): string {
    return this.real?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.materialize().level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.real ?? this.parent).isLevelEnabled(level);
  }

  fatal(...args: unknown[]): void {
    this.write("fatal", args);
  }
  error(...args: unknown[]): void {
    this.write("error", args);
  }
  warn(...args: unknown[]): void {
    this.write("warn", args);
  }
  info(...args: unknown[]): void {
    this.write("info", args);
  }
  debug(...args: unknown[]): void {
    this.write("debug", args);
  }
  trace(...args: unknown[]): void {
    this.write("trace", args);
  }
  silent(): void {}

  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.materialize().child(bindings, options);
  }

  /** Whether the pino child exists yet (tests). */
  get materialized(): boolean {
    return this.real !== null;
  }

  private write(level: RequestLogLevel, args: unknown[]): void {
    if (!this.isLevelEnabled(level)) return;
    const real = this.materialize();
    (real[level] as (...logArgs: unknown[]) => void).apply(real, args);
  }

  private materialize(): Logger {
    this.real ??= this.parent.child(this.bindings, this.options);
    return this.real;
  }
}

/** Fastify's `childLoggerFactory`: a lazy child unless the route changes the level or serializers. */
export function requestLoggerFactory(parent: Logger, bindings: Bindings, options: ChildLoggerOptions): Logger {
  const eager = options.level !== undefined || options.serializers !== undefined;
  return eager
    ? parent.child(bindings, options)
    : (new LazyRequestLogger(parent, bindings, options) as unknown as Logger);
}
