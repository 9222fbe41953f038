// Route schemas compiled when first used, and meanwhile in the background, one per event-loop turn.
//
// Why: Fastify compiles every route's validators (Ajv) and serializers (fast-json-stringify) while
// the app starts, in one stretch per plugin. A profile of a node restarting on a million keys put
// about a second of its start there, with stretches of up to 245 ms that no timer, heartbeat or
// request could cut into (an election timeout is 200-400 ms). Deferred, the start only records what
// to compile; each schema is then compiled in a turn of its own, or at once by the first request
// that needs it, whichever comes first. What each request sees is the same validator and the same
// serializer: only when they are built moves.

import { nextTurn } from "../cluster/turn-budget.js";

/** Schemas one app records (v1, v2 and the rest are about 250 routes; a few schemas each). */
export const deferredCompilesMax = 4_096;

interface Validator {
  (data: unknown): unknown;
  errors?: unknown;
}

export class DeferredCompiles {
  private readonly pending: (() => void)[] = [];
  private warming = false;
  private stopped = false;

  /**
   * A validator compiler that defers `compile` (Fastify's contract: the validator returns a
   * boolean and leaves its errors in `.errors`).
   */
  validators<A, V extends Validator>(compile: (arg: A) => V): (arg: A) => V {
    return (arg) => {
      const built = this.lazily(() => compile(arg));
      const validate: Validator = (data: unknown) => {
        const validator = built();
        const valid = validator(data);
        validate.errors = validator.errors;
        return valid;
      };
      return validate as V;
    };
  }

  /** A serializer compiler that defers `compile`. */
  serializers<A>(compile: (arg: A) => (payload: unknown) => string): (arg: A) => (payload: unknown) => string {
    return (arg) => {
      const built = this.lazily(() => compile(arg));
      return (payload: unknown) => built()(payload);
    };
  }

  /** No more background compiles (the app closes); a first use still compiles. */
  stop(): void {
    this.stopped = true;
    this.pending.length = 0;
  }

  /** `build` run once: by the first call of the returned function, or by the warm-up. */
  private lazily<F>(build: () => F): () => F {
    let built: F | undefined;
    let failure: unknown = undefined;
    let failed = false;
    const get = (): F => {
      if (built !== undefined) return built;
      if (failed) throw failure;
      try {
        built = build();
      } catch (error) {
        failed = true;
        failure = error;
        throw error;
      }
      return built;
    };
    if (!this.stopped) {
      if (this.pending.length >= deferredCompilesMax)
        throw new Error(`DeferredCompiles: more than ${deferredCompilesMax} schemas to compile`);
      // A schema that does not compile fails the requests that need it, as it fails the warm-up.
      this.pending.push(() => {
        try {
          get();
        } catch {
          // kept in `failure`: every request that needs it gets the error
        }
      });
      this.warm();
    }
    return get;
  }

  private warm(): void {
    if (this.warming) return;
    this.warming = true;
    void (async () => {
      while (!this.stopped) {
        await nextTurn();
        const compile = this.pending.shift();
        if (compile === undefined) break;
        compile();
      }
      this.warming = false;
    })();
  }
}
