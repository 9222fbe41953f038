// A strict reader of the Prometheus text exposition format (version 0.0.4) for tests: every line
// is a comment (# HELP / # TYPE) or a sample `name{label="value",...} number`; anything else throws.

export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface PromText {
  samples: PromSample[];
  types: Map<string, string>;
  /** The value of the sample `name` whose labels include `labels` (undefined when there is none). */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const sampleLine = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (-?[0-9.e+-]+|[Nn]a[Nn]|\+Inf|-Inf)$/;
const labelPair = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(,|$)/y;

export function parsePrometheusText(text: string): PromText {
  const samples: PromSample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("# HELP ")) continue;
    if (line.startsWith("# TYPE ")) {
      const [name, type] = line.slice("# TYPE ".length).split(" ");
      if (name === undefined || !["counter", "gauge", "histogram", "summary", "untyped"].includes(type ?? ""))
        throw new Error(`bad TYPE line: ${line}`);
      types.set(name, type!);
      continue;
    }
    const match = sampleLine.exec(line);
    if (match === null) throw new Error(`not a Prometheus sample line: ${line}`);
    const labels: Record<string, string> = {};
    const body = match[3] ?? "";
    labelPair.lastIndex = 0;
    while (labelPair.lastIndex < body.length) {
      const pair = labelPair.exec(body);
      if (pair === null) throw new Error(`bad labels in: ${line}`);
      labels[pair[1]!] = pair[2]!.replace(/\\"/g, '"').replace(/\\n/g, "\n").replace(/\\\\/g, "\\");
    }
    samples.push({ name: match[1]!, labels, value: Number(match[4]) });
  }
  return {
    samples,
    types,
    value(name, wanted = {}) {
      return samples.find(
        (sample) => sample.name === name && Object.entries(wanted).every(([label, v]) => sample.labels[label] === v),
      )?.value;
    },
  };
}
