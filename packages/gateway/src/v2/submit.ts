// Appending a v2 write through the gateway's one submit (services.ts: the audit context of the
// request's root key goes with it): a refused command becomes a v2 error. The route names the
// not-found error of the thing it addresses; everything else maps by the command's code.

import type { CommandError, CommandOk, KeyCommand } from "@keyraft/core";
import type { FastifyRequest } from "fastify";
import { V1Error } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { V2Error, type ProblemCode } from "./problem.js";

/** The codes a refused command carries (services.submit throws them as V1Errors). */
const commandErrorCodes: ReadonlySet<string> = new Set<CommandError["code"]>([
  "BAD_REQUEST",
  "NOT_FOUND",
  "CONFLICT",
  "DELETE_PROTECTED",
  "PRECONDITION_FAILED",
  "INSUFFICIENT_PERMISSIONS",
  "USAGE_EXCEEDED",
]);

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

/**
 * Appends `command` for `request` and waits for its durability; a refusal is thrown as its v2
 * error (other errors, such as a 503 of the store or the cluster, pass through).
 */
export async function submitV2(
  ctx: Pick<GatewayServices, "submit">,
  request: FastifyRequest,
  command: KeyCommand,
  options?: SubmitOptions,
): Promise<CommandOk> {
  try {
    return await ctx.submit(request, command);
  } catch (error) {
    if (error instanceof V1Error && commandErrorCodes.has(error.code) && error.statusCode < 500) {
      throw commandProblem({ ok: false, code: error.code as CommandError["code"], message: error.message }, options);
    }
    throw error;
  }
}
