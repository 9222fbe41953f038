// coreDecisionsPerSec: the core verification decision measured in process, without HTTP.
export interface CoreMeasurement {
  decisionsPerSec: number | null;
  note: string | null;
}

export async function measureCoreDecisions(): Promise<CoreMeasurement> {
  return { decisionsPerSec: null, note: "core verification decision not yet exported by @keyraft/core" };
}
