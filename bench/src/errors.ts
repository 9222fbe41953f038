// Operating errors of the harness: expected failures (a process would not start, a deployment
// refused a request, a scenario is not available) that the CLI reports as a message, without a
// stack. Anything else is a bug and is reported with its stack.

export class BenchError extends Error {
  override name = "BenchError";
}

/** A scenario, flag combination or input that this version cannot run (exit code 3). */
export class NotAvailableError extends BenchError {
  override name = "NotAvailableError";
}

/** A process the harness needed could not be started. */
export class ProcessStartError extends BenchError {
  override name = "ProcessStartError";
}

/** The deployment answered a set-up request (seeding) with an error. */
export class SetupRequestError extends BenchError {
  override name = "SetupRequestError";
}
