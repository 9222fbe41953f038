// Ajv errors in zod v3 wording (upstream validated with zod 3.23): `<path>: <message>` for the
// first issue only (as upstream answers a 400), e.g. `keyId: String must contain at least 1 character(s)`.

import type { ErrorObject } from "ajv";

/** zod's name for the type of a value ("received ..."). */
export function zodTypeName(value: unknown): string {
  if (value === undefined) return "undefined";
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isNaN(value) ? "nan" : "number";
  return typeof value;
}

function pointerToPath(pointer: string): string[] {
  if (pointer === "") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((part) => part.replace(/~1/g, "/").replace(/~0/g, "~"));
}

function expectedType(types: unknown, data: unknown): string {
  const list = (Array.isArray(types) ? types : [types]).filter((type) => type !== "null");
  const first = String(list[0] ?? "unknown");
  if (first === "integer") {
    if (typeof data === "number" && !Number.isNaN(data) && !Number.isInteger(data)) return "integer, received float";
    return `number, received ${zodTypeName(data)}`;
  }
  return `${first}, received ${zodTypeName(data)}`;
}

function numberParam(error: ErrorObject): number {
  const limit = (error.params as { limit?: unknown }).limit;
  return typeof limit === "number" ? limit : Number(limit);
}

/** The zod v3 message of one Ajv error (Ajv must run with `verbose: true` to carry `data`). */
function zodMessage(error: ErrorObject): string {
  switch (error.keyword) {
    case "required":
      return "Required";
    case "type":
      return `Expected ${expectedType((error.params as { type?: unknown }).type, error.data)}`;
    case "minLength":
      return `String must contain at least ${numberParam(error)} character(s)`;
    case "maxLength":
      return `String must contain at most ${numberParam(error)} character(s)`;
    case "minItems":
      return `Array must contain at least ${numberParam(error)} element(s)`;
    case "maxItems":
      return `Array must contain at most ${numberParam(error)} element(s)`;
    case "minimum":
      return `Number must be greater than or equal to ${numberParam(error)}`;
    case "exclusiveMinimum":
      return `Number must be greater than ${numberParam(error)}`;
    case "maximum":
      return `Number must be less than or equal to ${numberParam(error)}`;
    case "exclusiveMaximum":
      return `Number must be less than ${numberParam(error)}`;
    case "enum": {
      const allowed = ((error.params as { allowedValues?: unknown[] }).allowedValues ?? []).map(
        (value) => `'${String(value)}'`,
      );
      return `Invalid enum value. Expected ${allowed.join(" | ")}, received '${String(error.data)}'`;
    }
    case "pattern":
      // The only pattern in the schemas: permission names and slugs (upstream's wording).
      return "Only alphanumeric, underscores, periods, colons and hyphens are allowed";
    case "maxProperties":
      return `Object must contain at most ${numberParam(error)} key(s)`;
    default:
      return error.message ?? "Invalid input";
  }
}

/** `<path joined by '.'>: <message>` of the first Ajv error (the message alone at the root). */
export function zodStyleMessage(errors: readonly ErrorObject[]): string {
  const error = errors[0];
  if (error === undefined) return "Invalid input";
  const path = pointerToPath(error.instancePath);
  if (error.keyword === "required") path.push(String((error.params as { missingProperty?: unknown }).missingProperty));
  const message = zodMessage(error);
  return path.length === 0 ? message : `${path.join(".")}: ${message}`;
}
