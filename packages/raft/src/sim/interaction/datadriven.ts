import { assert } from "../../core/assert.js";

/** Lines in one transcript; a bigger file is a mistake. */
export const transcriptLinesMax = 20_000;

export interface CommandArgs {
  command: string;
  positional: string[];
  named: Map<string, string>;
}

export interface TranscriptCase {
  /** 1-based line of the command. */
  line: number;
  input: string;
  expected: string;
}

export interface TranscriptResult {
  /** The transcript with every expected output replaced by the actual one. */
  rewritten: string;
  mismatches: { line: number; input: string; expected: string; actual: string }[];
}

/**
 * Transcript format (etcd datadriven style): comment lines start with '#'; a case is a command
 * line, a line "----", then the expected output up to the next blank line.
 */
export function parseTranscript(text: string): { cases: TranscriptCase[]; leading: string[][] } {
  const lines = text.split("\n");
  assert(lines.length <= transcriptLinesMax, "transcript too long");
  const cases: TranscriptCase[] = [];
  const leading: string[][] = [];
  let comments: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    if (line.trim() === "" || line.startsWith("#")) {
      if (line.startsWith("#")) comments.push(line);
      continue;
    }
    assert(lines[i + 1] === "----", `transcript line ${i + 2}: expected ---- after the command`);
    const output: string[] = [];
    let j = i + 2;
    while (j < lines.length && (lines[j] ?? "") !== "") output.push(lines[j++] ?? "");
    cases.push({ line: i + 1, input: line, expected: output.join("\n") });
    leading.push(comments);
    comments = [];
    i = j;
  }
  return { cases, leading };
}

export function parseArgs(input: string): CommandArgs {
  const [command, ...tokens] = input.trim().split(/\s+/);
  assert(command !== undefined && command.length > 0, "empty command");
  const positional: string[] = [];
  const named = new Map<string, string>();
  for (const token of tokens) {
    const eq = token.indexOf("=");
    if (eq > 0) named.set(token.slice(0, eq), token.slice(eq + 1));
    else positional.push(token);
  }
  return { command, positional, named };
}

/** Runs every case through `run` (which returns the output text) and compares. */
export function runTranscript(text: string, run: (args: CommandArgs) => string): TranscriptResult {
  const { cases, leading } = parseTranscript(text);
  const parts: string[] = [];
  const mismatches: TranscriptResult["mismatches"] = [];
  cases.forEach((c, i) => {
    let actual: string;
    try {
      actual = run(parseArgs(c.input)).trimEnd();
    } catch (error) {
      actual = `error: ${error instanceof Error ? error.message : String(error)}`;
    }
    if (actual === "") actual = "ok";
    if (actual !== c.expected) mismatches.push({ line: c.line, input: c.input, expected: c.expected, actual });
    const comments = leading[i] ?? [];
    parts.push([...comments, c.input, "----", actual].join("\n"));
  });
  return { rewritten: `${parts.join("\n\n")}\n`, mismatches };
}
