// Building blocks of the route schemas. Every integer has an upper bound so that sums inside the
// limiter and the ledger stay exact (safe integers), and every string and array a bound.

export const countMax = 1_000_000_000_000;
/** Longest rate-limit window accepted: 366 days. */
export const durationMsMax = 366 * 86_400_000;
/** Longest id, name, identifier or other free string accepted (keyraft's bound). */
export const textLengthMax = 1024;
/** Unix ms timestamps accepted (up to the year 9999). */
export const timestampMsMax = 253_402_300_799_999;

export const text = (minLength = 0, maxLength = textLengthMax) => ({ type: "string", minLength, maxLength }) as const;
export const int = (minimum: number, maximum = countMax) => ({ type: "integer", minimum, maximum }) as const;
export const nullable = <T extends { type: string }>(schema: T) =>
  ({ ...schema, type: [schema.type, "null"] }) as const;
export const meta = { type: "object", additionalProperties: true } as const;

export const errorSchema = {
  type: "object",
  properties: {
    error: {
      type: "object",
      properties: {
        code: { type: "string" },
        docs: { type: "string" },
        message: { type: "string" },
        requestId: { type: "string" },
      },
      required: ["code", "docs", "message", "requestId"],
    },
  },
  required: ["error"],
} as const;

/** Response schemas: the 200 shape plus the v1 error body for every error status. */
export function responses(ok: object): Record<string, object> {
  return { 200: ok, "4xx": errorSchema, "5xx": errorSchema };
}

export const emptyObject = { type: "object", properties: {}, additionalProperties: false } as const;

export const namedItems = {
  type: "array",
  items: {
    type: "object",
    properties: { id: { type: "string" }, name: { type: "string" } },
    required: ["id", "name"],
  },
} as const;
