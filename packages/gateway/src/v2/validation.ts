// Request validation of the v2 routes: closed objects (an unknown field is a 400, never dropped
// silently as v1 does), no type coercion, schema defaults filled in. A failure becomes
// 400 `invalid_input` with one `errors[]` entry per schema failure (location = JSON pointer of
// the field, under `body`).

import { Ajv, type ErrorObject } from "ajv";
import { Type, type TProperties, type ObjectOptions } from "@sinclair/typebox";
import type { FastifySchemaCompiler, FastifySchemaValidationError } from "fastify";
import { V2Error, type ProblemDetail } from "./problem.js";

/** Schema failures reported per request (bounds the work on huge bad input). */
export const validationErrorsMax = 32;

/** A closed request object: unknown fields are rejected (upstream's `additionalProperties: false`). */
export const Closed = <T extends TProperties>(properties: T, options?: ObjectOptions) =>
  Type.Object(properties, { ...options, additionalProperties: false });

interface Validator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

export function v2ValidatorCompiler(): FastifySchemaCompiler<unknown> {
  const ajv = new Ajv({
    removeAdditional: false,
    useDefaults: true,
    coerceTypes: false,
    allErrors: true,
    strict: false,
    allowUnionTypes: true,
  });
  return ({ schema }) => {
    const compiled = ajv.compile(schema as object);
    const validate: Validator = (data: unknown) => {
      const valid = compiled(data);
      validate.errors = valid ? null : (compiled.errors ?? []).slice(0, validationErrorsMax);
      return valid;
    };
    return validate as ReturnType<FastifySchemaCompiler<unknown>>;
  };
}

/** The JSON pointer of the field a failure is about (the missing or unknown property included). */
function locationOf(item: FastifySchemaValidationError, part: string): string {
  const params = item.params as { missingProperty?: unknown; additionalProperty?: unknown };
  const child =
    item.keyword === "required"
      ? `/${String(params.missingProperty)}`
      : item.keyword === "additionalProperties"
        ? `/${String(params.additionalProperty)}`
        : "";
  return `${part}${item.instancePath}${child}`;
}

function messageOf(item: FastifySchemaValidationError): string {
  const params = item.params as { additionalProperty?: unknown };
  if (item.keyword === "additionalProperties") return `unknown property '${String(params.additionalProperty)}'`;
  return item.message ?? "is invalid";
}

/** A failed validation of `part` (body, querystring, headers) as the v2 400. */
export function validationProblem(validation: readonly FastifySchemaValidationError[], part: string): V2Error {
  const errors: ProblemDetail[] = validation.map((item) => ({
    location: locationOf(item, part),
    message: messageOf(item),
  }));
  const first = errors[0];
  const detail = first === undefined ? "The request is invalid." : `${first.location}: ${first.message}`;
  return new V2Error("invalid_input", detail, { errors });
}
