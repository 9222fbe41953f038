// What a worker counts besides latencies: HTTP statuses and a few distinct error messages, both bounded.
import { limits } from "../limits.js";

export class Tally {
  readonly statuses: Record<string, number> = {};
  readonly errorSamples: string[] = [];

  status(status: number): void {
    const key = String(status);
    const count = this.statuses[key];
    if (count !== undefined) this.statuses[key] = count + 1;
    else if (Object.keys(this.statuses).length < limits.statusesMax) this.statuses[key] = 1;
  }

  error(message: string): void {
    if (this.errorSamples.length < limits.errorSamplesMax && !this.errorSamples.includes(message))
      this.errorSamples.push(message);
  }
}
