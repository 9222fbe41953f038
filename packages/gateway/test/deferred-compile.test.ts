// Route schemas compiled when first used, or one per event-loop turn in the background
// (validation/deferred-compile.ts): each is compiled once, a request before the warm-up gets the
// same validator, errors reach the caller, and a stopped app compiles nothing more on its own.
import { describe, expect, it } from "vitest";
import { DeferredCompiles } from "../src/validation/deferred-compile.js";
import { nextTurn } from "../src/cluster/turn-budget.js";

interface TestValidator {
  (data: unknown): boolean;
  errors?: unknown;
}

/** A validator compiler that counts its compiles: the validator accepts `accepted` only. */
function countingCompiler(compiled: string[]) {
  return ({ accepted }: { accepted: string }): TestValidator => {
    compiled.push(accepted);
    const validate: TestValidator = (data) => {
      validate.errors = data === accepted ? null : [{ message: `expected ${accepted}` }];
      return data === accepted;
    };
    return validate;
  };
}

describe("DeferredCompiles", () => {
  it("compiles nothing while the app records its schemas, then one per turn", async () => {
    const compiled: string[] = [];
    const compiles = new DeferredCompiles();
    const compiler = compiles.validators(countingCompiler(compiled));
    const validators = ["a", "b", "c"].map((accepted) => compiler({ accepted }));
    expect(compiled).toEqual([]);
    await nextTurn();
    expect(compiled).toEqual(["a"]);
    await nextTurn();
    await nextTurn();
    expect(compiled).toEqual(["a", "b", "c"]);
    expect(validators.map((validate, i) => validate(["a", "b", "c"][i]))).toEqual([true, true, true]);
    expect(compiled).toHaveLength(3); // used afterwards: not compiled again
  });

  it("compiles at first use when the warm-up has not got there, once, with the errors of the validator", async () => {
    const compiled: string[] = [];
    const compiles = new DeferredCompiles();
    const validate = compiles.validators(countingCompiler(compiled))({ accepted: "x" });
    expect(validate("y")).toBe(false);
    expect(validate.errors).toEqual([{ message: "expected x" }]);
    expect(validate("x")).toBe(true);
    expect(validate.errors).toBeNull();
    await nextTurn();
    await nextTurn();
    expect(compiled).toEqual(["x"]);
  });

  it("defers serializers the same way", async () => {
    let builds = 0;
    const compiles = new DeferredCompiles();
    const serialize = compiles.serializers((prefix: string) => {
      builds++;
      return (payload: unknown) => `${prefix}${JSON.stringify(payload)}`;
    })("v:");
    expect(builds).toBe(0);
    expect(serialize({ a: 1 })).toBe('v:{"a":1}');
    await nextTurn();
    expect(builds).toBe(1);
  });

  it("a schema that does not compile fails every use with its error, and the warm-up goes on", async () => {
    const compiled: string[] = [];
    const compiles = new DeferredCompiles();
    const broken = compiles.validators((_: null): TestValidator => {
      throw new Error("bad schema");
    })(null);
    const fine = compiles.validators(countingCompiler(compiled))({ accepted: "ok" });
    await nextTurn();
    await nextTurn();
    expect(compiled).toEqual(["ok"]);
    expect(() => broken("anything")).toThrow("bad schema");
    expect(() => broken("anything")).toThrow("bad schema");
    expect(fine("ok")).toBe(true);
  });

  it("stopped (the app closed), it compiles nothing on its own; a use still compiles", async () => {
    const compiled: string[] = [];
    const compiles = new DeferredCompiles();
    const compiler = compiles.validators(countingCompiler(compiled));
    const first = compiler({ accepted: "p" });
    compiler({ accepted: "q" });
    compiles.stop();
    await nextTurn();
    await nextTurn();
    expect(compiled).toEqual([]);
    expect(first("p")).toBe(true);
    expect(compiled).toEqual(["p"]);
  });
});
