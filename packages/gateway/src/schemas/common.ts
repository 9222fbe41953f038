// Building blocks of the route schemas (TypeBox: each schema is the JSON schema that validates,
// serializes and documents the route, and carries its TypeScript type). Every integer has an
// upper bound so that sums inside the limiter and the ledger stay exact (safe integers), and
// every string and array a bound.
//
// The JSON these builders emit is the contract of the validation messages (validation/): a
// nullable is `type: [t, "null"]` and an enum `{ type: "string", enum }`, not anyOf unions,
// whose errors would read differently.

import { Type, type Static, type TSchema, type TUnsafe } from "@sinclair/typebox";

export const countMax = 1_000_000_000_000;
/** Longest rate-limit window accepted: 366 days. */
export const durationMsMax = 366 * 86_400_000;
/** Longest id, name, identifier or other free string accepted (keyraft's bound). */
export const textLengthMax = 1024;
/** Unix ms timestamps accepted (up to the year 9999). */
export const timestampMsMax = 253_402_300_799_999;
/** Page size of list routes when the request names none (the schemas' `default`). */
export const pageLimitDefault = 100;

export const text = (minLength = 0, maxLength = textLengthMax, options: { default?: string } = {}) =>
  Type.String({ minLength, maxLength, ...options });
export const int = (minimum: number, maximum = countMax, options: { default?: number } = {}) =>
  Type.Integer({ minimum, maximum, ...options });
/** `schema` or null, as `type: [schema.type, "null"]`. */
export const nullable = <T extends TSchema & { type: string }>(schema: T): TUnsafe<Static<T> | null> =>
  Type.Unsafe<Static<T> | null>({ ...schema, type: [schema.type, "null"] });
/** An optional field of an answer: absent, or undefined (dropped when serialized). */
export const optional = <T extends TSchema>(schema: T) => Type.Optional(Type.Unsafe<Static<T> | undefined>(schema));
/** One of `values`, as `{ type: "string", enum }`. */
export const stringEnum = <const V extends readonly string[]>(values: V, options: { default?: V[number] } = {}) =>
  Type.Unsafe<V[number]>({ type: "string", enum: values, ...options });
/** Any JSON object (a key's or identity's `meta`). */
type JsonObjectSchema = TUnsafe<Record<string, unknown>> & { type: "object" };
export const meta = Type.Unsafe({ type: "object", additionalProperties: true }) as JsonObjectSchema;

export const errorSchema = Type.Object({
  error: Type.Object({
    code: Type.String(),
    docs: Type.String(),
    message: Type.String(),
    requestId: Type.String(),
  }),
});

/**
 * Response schemas: the 200 shape plus the v1 error body for every error status. They drive
 * serialization (fast-json-stringify drops fields the schema does not name), the OpenAPI
 * document, and the type of what a handler may send (its answer's fields use `optional`).
 */
export function responses<T extends TSchema>(ok: T) {
  return { 200: ok, "4xx": errorSchema, "5xx": errorSchema };
}

export const emptyObject = Type.Object({}, { additionalProperties: false });

export const namedItems = Type.Array(Type.Object({ id: Type.String(), name: Type.String() }));
