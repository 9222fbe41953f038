// KEYRAFT_AUDIT_RETENTION_DAYS: how long audit entries are kept (docs: README "Operations").

/** An integer variable as config.ts reads it (structurally the same type; config.ts imports this file). */
interface IntegerVariable {
  name: string;
  defaultValue: number;
  min: number;
  max: number;
}

export interface AuditConfig {
  /** Entries older than this are dropped from the audit log (and hidden until they are). */
  retentionDays: number;
}

export const auditRetentionDaysVariable: IntegerVariable = {
  name: "KEYRAFT_AUDIT_RETENTION_DAYS",
  defaultValue: 90,
  min: 1,
  max: 3650,
};

const dayMs = 86_400_000;

/** The retention carried in audit contexts, in ms (unset: the default days). */
export function auditRetentionMs(retentionDays: number | undefined): number {
  return (retentionDays ?? auditRetentionDaysVariable.defaultValue) * dayMs;
}

export function parseAuditConfig(integer: (variable: IntegerVariable) => number): AuditConfig {
  return { retentionDays: integer(auditRetentionDaysVariable) };
}
