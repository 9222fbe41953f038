// The logger the I/O side accepts: the object-first subset of pino's API (etcd's tiny Logger
// interface). A pino logger fits as is; the default logs nothing. Never pass secrets in `fields`.

export interface Logger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

const ignore = (): void => undefined;

export const silentLogger: Logger = { debug: ignore, info: ignore, warn: ignore, error: ignore };
