// KEYRAFT_KEY_MIGRATIONS: the key migrations a deployment declares for v2 keys.migrateKeys and
// on-demand migration at verification (docs/api-v2.md). A JSON object from `migrationId` to the
// hash algorithm of the keys it imports, e.g. {"mig_legacy":"sha256"}. Every node of a cluster
// must be given the same value: the registry is configuration, the keys it imports are state.

/** The algorithms a migration may declare. */
export const keyMigrationAlgorithms = ["sha256", "github.com/seamapi/prefixed-api-key"] as const;
export type KeyMigrationAlgorithm = (typeof keyMigrationAlgorithms)[number];

/** migrationId → algorithm. */
export type KeyMigrations = ReadonlyMap<string, KeyMigrationAlgorithm>;

export const keyMigrationsVariable = "KEYRAFT_KEY_MIGRATIONS";
/** Migrations one deployment may declare. */
export const keyMigrationsMax = 1000;
/** Bounds of a migrationId (upstream's request bound is 3..255). */
const migrationIdPattern = /^[\x21-\x7e]{3,255}$/;

function isAlgorithm(value: unknown): value is KeyMigrationAlgorithm {
  return keyMigrationAlgorithms.some((algorithm) => algorithm === value);
}

/** Parses the variable; each problem is pushed to `errors` (main exits 2) and the result is then empty. */
export function parseKeyMigrations(raw: string | undefined, errors: string[]): KeyMigrations {
  const migrations = new Map<string, KeyMigrationAlgorithm>();
  if (raw === undefined) return migrations;
  const expected =
    "expected a JSON object from migration id (3-255 printable characters) to one of " +
    `${keyMigrationAlgorithms.join(", ")}, e.g. {"mig_legacy":"sha256"}`;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    errors.push(`${keyMigrationsVariable} is not valid JSON: ${expected}`);
    return migrations;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    errors.push(`${keyMigrationsVariable} is invalid: ${expected}`);
    return migrations;
  }
  const entries = Object.entries(parsed as Record<string, unknown>);
  if (entries.length > keyMigrationsMax) {
    errors.push(`${keyMigrationsVariable} declares ${entries.length} migrations: at most ${keyMigrationsMax}`);
    return migrations;
  }
  for (const [id, algorithm] of entries) {
    if (!migrationIdPattern.test(id) || !isAlgorithm(algorithm)) {
      errors.push(
        `${keyMigrationsVariable} entry ${JSON.stringify(id)}: ${JSON.stringify(algorithm)} is invalid: ${expected}`,
      );
      continue;
    }
    migrations.set(id, algorithm);
  }
  return errors.length === 0 ? migrations : new Map();
}
