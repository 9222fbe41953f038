// Replays packages/core/testdata/sliding-window.txt (etcd datadriven style): each block is a
// command line, `----`, and the expected output up to a blank line. Run with UPDATE_TESTDATA=1
// to rewrite the expected outputs from the current implementation (then review the diff).
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { SlidingWindowLimiter, type LimitCheck } from "../src/ratelimit/sliding-window.js";
import type { LimitOutcome } from "../src/ratelimit/sliding-window.js";

const path = fileURLToPath(new URL("../testdata/sliding-window.txt", import.meta.url));
const update = process.env["UPDATE_TESTDATA"] === "1";

interface Command {
  name: string;
  args: Map<string, string[]>;
}

function parseCommand(line: string): Command {
  const [name, ...words] = line.trim().split(/\s+/);
  const args = new Map<string, string[]>();
  for (const word of words) {
    const at = word.indexOf("=");
    if (at < 0) throw new Error(`bad argument ${word} in: ${line}`);
    const key = word.slice(0, at);
    args.set(key, [...(args.get(key) ?? []), word.slice(at + 1)]);
  }
  return { name: name!, args };
}

function intArg(command: Command, key: string, fallback?: number): number {
  const value = command.args.get(key)?.[0];
  if (value === undefined) {
    if (fallback === undefined) throw new Error(`${command.name}: missing ${key}=`);
    return fallback;
  }
  const parsed = Number(value.replaceAll("_", ""));
  if (!Number.isSafeInteger(parsed)) throw new Error(`${command.name}: ${key}=${value} is not an integer`);
  return parsed;
}

function checksOf(command: Command): LimitCheck[] {
  const listed = command.args.get("check");
  if (listed === undefined) {
    return [
      {
        key: command.args.get("key")?.[0] ?? "a",
        limit: intArg(command, "limit"),
        durationMs: intArg(command, "duration"),
        cost: intArg(command, "cost", 1),
      },
    ];
  }
  return listed.map((spec) => {
    const [key, limit, durationMs, cost] = spec.split("/");
    return { key: key!, limit: Number(limit), durationMs: Number(durationMs), cost: Number(cost ?? 1) };
  });
}

function formatOutcome(check: LimitCheck, outcome: LimitOutcome): string {
  const verdict = outcome.success ? "fits" : "over";
  return `${check.key}: ${verdict} remaining=${outcome.remaining} reset=${outcome.resetAtMs}`;
}

/** Executes one command against the environment and returns its output lines. */
function execute(env: { limiter: SlidingWindowLimiter }, command: Command): string[] {
  switch (command.name) {
    case "new": {
      env.limiter = new SlidingWindowLimiter({
        bucketsPerWindow: intArg(command, "buckets", 10),
        entriesMax: intArg(command, "entries", 1_000_000),
      });
      return ["ok"];
    }
    case "limit": {
      const checks = checksOf(command);
      const result = env.limiter.limit(checks, intArg(command, "now"));
      return [
        result.success ? "admitted" : "refused",
        ...checks.map((check, i) => formatOutcome(check, result.outcomes[i]!)),
        ...result.touched.map((t) => `touched ${t.key} bucket=${t.bucketStartMs} count=${t.count}`),
      ];
    }
    case "peek": {
      const checks = checksOf(command);
      const outcomes = env.limiter.peek(checks, intArg(command, "now"));
      return checks.map((check, i) => formatOutcome(check, outcomes[i]!));
    }
    case "snapshot": {
      const buckets = env.limiter.snapshot(intArg(command, "now"));
      if (buckets.length === 0) return ["(empty)"];
      return buckets.map(
        (b) => `${b.key} limit=${b.limit} duration=${b.durationMs} bucket=${b.bucketStartMs} count=${b.count}`,
      );
    }
    case "restore": {
      env.limiter.restoreBucket({
        key: command.args.get("key")?.[0] ?? "a",
        limit: intArg(command, "limit"),
        durationMs: intArg(command, "duration"),
        bucketStartMs: intArg(command, "start"),
        count: intArg(command, "count"),
      });
      return ["ok"];
    }
    case "size":
      return [`${env.limiter.size()}`];
    default:
      throw new Error(`unknown command: ${command.name}`);
  }
}

interface Block {
  line: number;
  command: string;
  expected: string[];
  /** Index of the first expected line and one past the last, in the file's lines. */
  from: number;
  to: number;
}

function parseFile(lines: readonly string[]): Block[] {
  const blocks: Block[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (line.trim() === "" || line.startsWith("#")) {
      i++;
      continue;
    }
    if (lines[i + 1] !== "----") throw new Error(`line ${i + 2}: expected ---- after the command`);
    let end = i + 2;
    while (end < lines.length && lines[end]!.trim() !== "") end++;
    blocks.push({ line: i + 1, command: line, expected: lines.slice(i + 2, end), from: i + 2, to: end });
    i = end;
  }
  return blocks;
}

describe("sliding-window transcripts (testdata/sliding-window.txt)", () => {
  it("replays every block with the recorded output", () => {
    const lines = readFileSync(path, "utf8").replace(/\n$/, "").split("\n");
    const blocks = parseFile(lines);
    expect(blocks.length).toBeGreaterThan(20);
    const env = { limiter: new SlidingWindowLimiter() };
    const rewritten = [...lines];
    // Replace from the end so earlier indexes stay valid.
    const outputs = blocks.map((block) => execute(env, parseCommand(block.command)));
    if (update) {
      for (let b = blocks.length - 1; b >= 0; b--)
        rewritten.splice(blocks[b]!.from, blocks[b]!.to - blocks[b]!.from, ...outputs[b]!);
      writeFileSync(path, `${rewritten.join("\n")}\n`);
      return;
    }
    blocks.forEach((block, b) => {
      expect(outputs[b], `line ${block.line}: ${block.command}`).toEqual(block.expected);
    });
  });
});
