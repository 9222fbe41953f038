/** Entries the audit log keeps at most (in memory and in snapshots); the oldest go first. */
export const auditEntriesMax = 50_000;
/** Target ids one entry keeps at most (an import of many keys names the first ones). */
export const auditTargetIdsMax = 32;
/** Names in one list of an entry's changes (permissions, roles) at most. */
export const auditListItemsMax = 32;
/** Entries one listLogs page returns at most. */
export const auditPageEntriesMax = 100;
