// Appending a v2 write to the command log: a refused command becomes a v2 error. The route names
// the not-found error of the thing it addresses; everything else maps by the command's code.

import type { CommandError, CommandOk, KeyCommand } from "@keyraft/core";
import type { GatewayServices } from "../services.js";
import { V2Error, type ProblemCode } from "./problem.js";

export interface SubmitOptions {
  /** The 404 of a NOT_FOUND outcome (default `key_not_found`). */
  notFound?: ProblemCode;
  /** A route-specific translation, tried first; undefined = the default mapping. */
  translate?: (error: CommandError) => V2Error | undefined;
}

export function commandProblem(error: CommandError, options: SubmitOptions = {}): V2Error {
  const translated = options.translate?.(error);
  if (translated !== undefined) return translated;
  switch (error.code) {
    case "BAD_REQUEST":
    case "CONFLICT":
      return new V2Error("invalid_input", error.message, { errors: [{ location: "body", message: error.message }] });
    case "NOT_FOUND":
      return new V2Error(options.notFound ?? "key_not_found", error.message);
    case "DELETE_PROTECTED":
      return new V2Error(
        "protected_resource",
        "This API has delete protection enabled. Disable it before attempting to delete.",
      );
    case "PRECONDITION_FAILED":
      return new V2Error("precondition_failed", error.message);
    case "INSUFFICIENT_PERMISSIONS":
      return new V2Error("insufficient_permissions", error.message);
    case "USAGE_EXCEEDED":
      return new V2Error("precondition_failed", error.message);
    default: {
      const unreachable: never = error.code;
      throw new Error(`commandProblem: unknown code ${String(unreachable)}`);
    }
  }
}

/** Appends `command` and waits for its durability; a refusal is thrown as its v2 error. */
export async function submitV2(ctx: GatewayServices, command: KeyCommand, options?: SubmitOptions): Promise<CommandOk> {
  const outcome = await ctx.commandLog.append(command);
  if (!outcome.ok) throw commandProblem(outcome, options);
  return outcome;
}
