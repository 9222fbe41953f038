import { describe, expect, it } from "vitest";
import { integerVariables, parseConfig } from "../src/config.js";

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
        bodyLimitBytes: 1_048_576,
        writeQueueEntriesMax: 10_000,
        shutdownTimeoutMs: 10_000,
      },
    });
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
        KEYRAFT_BODY_LIMIT_BYTES: "2048",
        KEYRAFT_WRITE_QUEUE_MAX: "7",
        KEYRAFT_SHUTDOWN_TIMEOUT_MS: "0",
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
        bodyLimitBytes: 2048,
        writeQueueEntriesMax: 7,
        shutdownTimeoutMs: 0,
      },
    });
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
    ["KEYRAFT_LOG_LEVEL", "verbose", /KEYRAFT_LOG_LEVEL="verbose" is invalid: expected one of fatal, error, warn, info, debug, trace, silent/],
    ["KEYRAFT_SNAPSHOT_EVERY", "0", /KEYRAFT_SNAPSHOT_EVERY="0" is out of range: expected an integer from 1 to 10000000/],
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
      for (const value of [variable.min, variable.max]) expect(parseConfig({ [variable.name]: String(value) }, cwd).ok).toBe(true);
      expect(parseConfig({ [variable.name]: String(variable.max + 1) }, cwd).ok).toBe(false);
      if (variable.min > 0) expect(parseConfig({ [variable.name]: String(variable.min - 1) }, cwd).ok).toBe(false);
    }
  });

  it("accepts a root key of 16 to 256 printable characters and never echoes a rejected one", () => {
    expect(parseConfig({ KEYRAFT_ROOT_KEY: "a".repeat(16) }, cwd).ok).toBe(true);
    expect(parseConfig({ KEYRAFT_ROOT_KEY: "a".repeat(256) }, cwd).ok).toBe(true);
    for (const bad of ["", "a".repeat(15), "a".repeat(257), "secret with spaces!", "secret\u00e9secret\u00e9secret", "abcdefghijklmnop\n"]) {
      const result = parseConfig({ KEYRAFT_ROOT_KEY: bad }, cwd);
      expect(result.ok).toBe(false);
      if (result.ok) continue;
      expect(result.errors[0]).toMatch(/^KEYRAFT_ROOT_KEY is invalid \(\d+ characters\): expected 16 to 256 printable ASCII/);
      if (bad.length > 0) expect(result.errors[0]).not.toContain(bad.trim());
    }
  });

  it("reports every invalid variable at once", () => {
    const result = parseConfig({ PORT: "x", KEYRAFT_LOG_LEVEL: "loud", HOST: "" }, cwd);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.errors.map((error) => error.split(/[= ]/)[0])).toEqual(["PORT", "HOST", "KEYRAFT_LOG_LEVEL"]);
  });
});
