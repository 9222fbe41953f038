import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger, redactedText } from "../src/logger.js";

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
  return { lines, destination, text: () => lines.join("\n") };
}

describe("logger", () => {
  it("writes structured JSON and never prints a secret", () => {
    const out = capture();
    const logger = createLogger({ level: "info", destination: out.destination });
    const secrets = [
      "Bearer root_SECRETAAAA",
      "key_SECRETBBBB",
      "root_SECRETCCCC",
      "cluster_SECRETDDDD",
      "plain_SECRETEEEE",
      "deep_SECRETFFFF",
    ];
    logger.info(
      { req: { method: "POST", url: "/v1/keys.verifyKey", headers: { authorization: secrets[0], host: "x" } } },
      "request",
    );
    logger.info({ body: { key: secrets[1], apiId: "api_1" } }, "body");
    logger.info({ config: { rootKey: secrets[2], port: 8080 }, cluster: { secret: secrets[3] } }, "config");
    logger.info({ result: { plaintext: secrets[4] }, key: secrets[1] }, "created");
    logger.info({ request: { body: { key: secrets[5] } } }, "nested");
    const text = out.text();
    for (const secret of secrets) expect(text).not.toContain(secret.replace("Bearer ", ""));
    const records = out.lines.map((line) => JSON.parse(line) as Record<string, any>);
    expect(records[0]?.["req"].headers.authorization).toBe(redactedText);
    expect(records[0]?.["req"].headers.host).toBe("x");
    expect(records[1]?.["body"]).toEqual({ key: redactedText, apiId: "api_1" });
    expect(records[2]?.["config"]).toEqual({ rootKey: redactedText, port: 8080 });
    expect(records[4]?.["request"].body.key).toBe(redactedText);
    expect(records[0]).toMatchObject({ level: 30, msg: "request", service: "keyraft" });
  });

  it("respects the level", () => {
    const out = capture();
    const logger = createLogger({ level: "warn", destination: out.destination });
    logger.info("hidden");
    logger.warn("shown");
    expect(out.lines).toHaveLength(1);
    expect(JSON.parse(out.lines[0]!)).toMatchObject({ msg: "shown", level: 40 });
  });
});
