import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { LazyRequestLogger, createLogger, redactedText, requestLoggerFactory } from "../src/logger.js";

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(
        ...String(chunk)
          .split("\n")
          .filter((line) => line.length > 0),
      );
      callback();
    },
  });
  return { records: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>), destination };
}

describe("request logger (made on first use)", () => {
  it("creates no pino child while nothing is logged at an enabled level", () => {
    const out = capture();
    const parent = createLogger({ level: "warn", destination: out.destination });
    const logger = requestLoggerFactory(parent, { reqId: "req_1" }, {}) as unknown as LazyRequestLogger;
    expect(logger).toBeInstanceOf(LazyRequestLogger);
    logger.info("hidden");
    logger.debug({ a: 1 }, "hidden");
    logger.trace("hidden");
    expect(logger.materialized).toBe(false);
    expect(logger.level).toBe("warn");
    expect(out.records()).toEqual([]);
  });

  it("logs with the request's bindings, redacted, at enabled levels", () => {
    const out = capture();
    const parent = createLogger({ level: "info", destination: out.destination });
    const logger = requestLoggerFactory(parent, { reqId: "req_2" }, {}) as unknown as LazyRequestLogger;
    logger.error({ body: { key: "key_SECRET" } }, "request failed");
    logger.info("done");
    expect(logger.materialized).toBe(true);
    const records = out.records();
    expect(records).toHaveLength(2);
    expect(records[0]).toMatchObject({ level: 50, reqId: "req_2", msg: "request failed", body: { key: redactedText } });
    expect(records[1]).toMatchObject({ level: 30, reqId: "req_2", msg: "done" });
  });

  it("follows level changes of the parent until it exists, and its own after", () => {
    const out = capture();
    const parent = createLogger({ level: "warn", destination: out.destination });
    const logger = requestLoggerFactory(parent, { reqId: "req_3" }, {}) as unknown as LazyRequestLogger;
    parent.level = "info";
    expect(logger.isLevelEnabled("info")).toBe(true);
    logger.level = "error";
    logger.warn("hidden now");
    expect(out.records()).toEqual([]);
    const child = logger.child({ extra: 1 });
    child.error("from a grandchild");
    expect(out.records()[0]).toMatchObject({ reqId: "req_3", extra: 1, msg: "from a grandchild" });
  });

  it("gives a real child at once when the route sets its own level", () => {
    const out = capture();
    const parent = createLogger({ level: "warn", destination: out.destination });
    const logger = requestLoggerFactory(parent, { reqId: "req_4" }, { level: "debug" });
    expect(logger).not.toBeInstanceOf(LazyRequestLogger);
    logger.debug("shown");
    expect(out.records()[0]).toMatchObject({ reqId: "req_4", msg: "shown", level: 20 });
  });
});
