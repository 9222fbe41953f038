// KEYRAFT_METRICS_PORT and KEYRAFT_METRICS_TOKEN: where GET /metrics is served and who may read it.

/** An integer variable as config.ts reads it (structurally the same type; config.ts imports this file). */
interface IntegerVariable {
  name: string;
  defaultValue: number;
  min: number;
  max: number;
}

export interface MetricsConfig {
  /** A port of its own for GET /metrics, or null: served on the API port. */
  port: number | null;
  /** The bearer token GET /metrics requires, or null: open to anyone who can reach the port. */
  token: string | null;
}

export const metricsPortVariable: IntegerVariable = {
  name: "KEYRAFT_METRICS_PORT",
  defaultValue: 0,
  min: 0,
  max: 65_535,
};
/** Bounds of KEYRAFT_METRICS_TOKEN: printable ASCII that survives an HTTP header. */
export const metricsTokenLengthMin = 16;
export const metricsTokenLengthMax = 256;

export function parseMetricsConfig(
  env: Readonly<Record<string, string | undefined>>,
  errors: string[],
  integer: (variable: IntegerVariable) => number,
): MetricsConfig {
  const port = env[metricsPortVariable.name] === undefined ? null : integer(metricsPortVariable);
  const raw = env["KEYRAFT_METRICS_TOKEN"];
  let token: string | null = null;
  if (raw !== undefined) {
    // Never echo the value: it is a secret.
    if (raw.length < metricsTokenLengthMin || raw.length > metricsTokenLengthMax || !/^[\x21-\x7e]+$/.test(raw)) {
      errors.push(
        `KEYRAFT_METRICS_TOKEN is invalid (${raw.length} characters): expected ${metricsTokenLengthMin} to ` +
          `${metricsTokenLengthMax} printable ASCII characters without spaces, or leave it unset`,
      );
    } else token = raw;
  }
  return { port, token };
}
