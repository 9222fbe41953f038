// Defaults and bounds of the harness: every buffer, pool and flag has a named limit.
export const limits = {
  durationSDefault: 10,
  durationSMax: 3600,
  warmupSDefault: 2,
  connectionsDefault: 64,
  connectionsMax: 4096,
  keysDefault: 10_000,
  /** The scale scenario's default: the size the figures are stated at. */
  scaleKeysDefault: 1_000_000,
  /** The key-state machine's own bound (core keystate/limits.ts keysMax). */
  keysMax: 10_000_000,
  zipfExponentDefault: 1.0,
  clusterNodesMax: 9,
  workersMax: 16,
  roundsDefault: 3,
  roundsMax: 100,
  targetsMax: 64,
  /** Requests in flight while seeding a node through its HTTP API. */
  seedConcurrency: 32,
  /** Output lines of a child process kept for error messages. */
  childLogLinesMax: 50,
  /** Distinct error messages kept per phase (the rest are only counted). */
  errorSamplesMax: 10,
  /** Distinct HTTP statuses counted per phase. */
  statusesMax: 32,
  /** Time a started process gets to become ready. */
  startTimeoutMs: 30_000,
  /** Time every node of a cluster gets to apply the seed written through one of them. */
  convergeTimeoutMs: 60_000,
  /** How often the nodes' progress is read while waiting for it. */
  convergePollMs: 50,
  /** Time a process gets between SIGTERM and SIGKILL. */
  stopTimeoutMs: 5_000,
  /** A request without a complete answer after this long counts as an error (a hung target cannot stall a phase). */
  requestTimeoutMs: 10_000,
  /** Latencies above this are clamped (the histogram auto-resizes, this bounds its memory). */
  latencyUsMax: 60_000_000,
} as const;
