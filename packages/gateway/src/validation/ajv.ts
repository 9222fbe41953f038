// The validators of request bodies and query strings. Bodies are not coerced (a number where a
// string is expected is an error, as with zod); query strings are (every value arrives as a
// string). Unknown fields are dropped, as zod's `object` strips them.
//
// zod reports the first issue in the order of the schema's fields, while Ajv checks `required`
// before the fields' types; so validators collect all errors and order them by the position of
// their top-level field in the schema before the first one is reported.

import { Ajv, type ErrorObject, type Options } from "ajv";
import type { FastifySchemaCompiler } from "fastify";

const common: Options = {
  removeAdditional: true,
  useDefaults: true,
  allErrors: true,
  verbose: true,
  strict: false,
  allowUnionTypes: true,
};

/** Errors kept per failed validation (the first one is reported; bounds work on huge bad input). */
export const validationErrorsMax = 64;

function topLevelField(error: ErrorObject): string {
  if (error.instancePath === "") {
    return error.keyword === "required" ? String((error.params as { missingProperty?: unknown }).missingProperty) : "";
  }
  const end = error.instancePath.indexOf("/", 1);
  return error.instancePath.slice(1, end < 0 ? undefined : end);
}

function orderErrors(errors: readonly ErrorObject[], fieldOrder: ReadonlyMap<string, number>): ErrorObject[] {
  const rank = (error: ErrorObject): number => {
    const field = topLevelField(error);
    return field === "" ? -1 : (fieldOrder.get(field) ?? fieldOrder.size);
  };
  return errors
    .slice(0, validationErrorsMax)
    .map((error, index) => ({ error, index, rank: rank(error) }))
    .sort((a, b) => a.rank - b.rank || a.index - b.index)
    .map((entry) => entry.error);
}

interface Validator {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

export function validatorCompiler(): FastifySchemaCompiler<unknown> {
  const bodyAjv = new Ajv({ ...common, coerceTypes: false });
  const queryAjv = new Ajv({ ...common, coerceTypes: true });
  return ({ schema, httpPart }) => {
    const compiled = (httpPart === "body" ? bodyAjv : queryAjv).compile(schema as object);
    const properties = (schema as { properties?: Record<string, unknown> }).properties ?? {};
    const fieldOrder = new Map(Object.keys(properties).map((name, index) => [name, index]));
    const validate: Validator = (data: unknown) => {
      if (compiled(data)) {
        validate.errors = null;
        return true;
      }
      validate.errors = orderErrors(compiled.errors ?? [], fieldOrder);
      return false;
    };
    return validate as ReturnType<FastifySchemaCompiler<unknown>>;
  };
}
