import { describe, expect, it } from "vitest";
import { ArgsError, parseArgs } from "../src/args.js";

describe("parseArgs", () => {
  it("gives the defaults for a bare scenario", () => {
    const options = parseArgs(["verify"]);
    expect(options).toMatchObject({
      scenario: "verify",
      targets: [],
      durationS: 10,
      rounds: 3,
      connections: 64,
      keys: 10_000,
      distribution: "uniform",
      cluster: null,
      workers: 1,
      rootKey: null,
      baselines: true,
      help: false,
    });
  });

  it("reads every flag, in both --flag value and --flag=value forms", () => {
    const options = parseArgs([
      "mixed",
      "--target",
      "http://a:1/,https://b.example",
      "--duration=5",
      "--connections",
      "8",
      "--keys",
      "100",
      "--distribution",
      "zipf",
      "--zipf-exponent",
      "1.2",
      "--workers=2",
      "--root-key",
      "rk",
      "--no-baselines",
      "--warmup",
      "0",
      "--rounds",
      "5",
    ]);
    expect(options).toMatchObject({
      scenario: "mixed",
      targets: ["http://a:1", "https://b.example"],
      durationS: 5,
      connections: 8,
      keys: 100,
      distribution: "zipf",
      zipfExponent: 1.2,
      workers: 2,
      rootKey: "rk",
      baselines: false,
      warmupS: 0,
      rounds: 5,
    });
  });

  it("takes the root key from KEYRAFT_ROOT_KEY when no flag gives it", () => {
    expect(parseArgs(["verify"], { KEYRAFT_ROOT_KEY: "from-env" }).rootKey).toBe("from-env");
    expect(parseArgs(["verify", "--root-key", "flag"], { KEYRAFT_ROOT_KEY: "from-env" }).rootKey).toBe("flag");
  });

  it("accepts --cluster with a node count", () => {
    expect(parseArgs(["verify", "--cluster", "3"]).cluster).toBe(3);
    for (const scenario of ["ratelimit", "admin", "mixed"])
      expect(parseArgs([scenario, "--cluster", "2"]).cluster).toBe(2);
  });

  it("runs 3 interleaved rounds by default, fewer when --duration has fewer whole seconds", () => {
    expect(parseArgs(["verify", "--duration", "30"]).rounds).toBe(3);
    expect(parseArgs(["verify", "--duration", "2"]).rounds).toBe(2);
    expect(parseArgs(["verify", "--duration", "1.5"]).rounds).toBe(1);
    expect(parseArgs(["verify", "--duration", "30", "--rounds", "1"]).rounds).toBe(1);
  });

  it("allows --help without a scenario", () => {
    expect(parseArgs(["--help"]).help).toBe(true);
  });

  const bad: Array<[string[], RegExp]> = [
    [[], /missing scenario/],
    [["nope"], /unknown scenario "nope"/],
    [["verify", "admin"], /one scenario expected/],
    [["verify", "--bogus"], /unknown flag --bogus/],
    [["verify", "--duration"], /--duration needs a value/],
    [["verify", "--duration", "--keys", "5"], /--duration needs a value/],
    [["verify", "--duration", "abc"], /--duration must be a number/],
    [["verify", "--duration", "0"], /--duration must be between/],
    [["verify", "--connections", "2.5"], /--connections must be a whole number/],
    [["verify", "--connections", "0"], /--connections must be between/],
    [["verify", "--connections", "5000"], /--connections must be between/],
    [["verify", "--keys", "-1"], /--keys must be a whole number/],
    [["verify", "--distribution", "normal"], /--distribution must be uniform or zipf/],
    [["verify", "--target", "not a url"], /is not a URL/],
    [["verify", "--target", "ftp://x"], /must be http/],
    [["verify", "--target", ","], /at least one URL/],
    [["verify", "--target", "http://a", "--cluster", "3"], /cannot be combined with --target/],
    [["raft", "--cluster", "3"], /starts what it measures itself/],
    [["cluster", "--cluster", "3"], /starts what it measures itself/],
    [["verify", "--cluster", "3", "--node-entry", "x.js"], /--node-entry starts a single local node/],
    [["verify", "--cluster", "3", "--connections", "2"], /at least the number of --cluster nodes/],
    [["verify", "--cluster", "10"], /--cluster must be between 1 and 9/],
    [["verify", "--no-baselines=yes"], /takes no value/],
    [["verify", "--keys", "5", "--keys", "6"], /given twice/],
    [["verify", "--rounds", "0"], /--rounds must be between/],
    [["verify", "--duration", "2", "--rounds", "3"], /under a second per round/],
    [["verify", "--target", "http://a,http://b,http://c", "--connections", "2"], /at least the number of targets/],
  ];
  for (const [argv, message] of bad) {
    it(`rejects ${JSON.stringify(argv)} with a clear message`, () => {
      expect(() => parseArgs(argv)).toThrow(ArgsError);
      expect(() => parseArgs(argv)).toThrow(message);
    });
  }
});
