// Tokens of the analytics SQL subset: words (keywords and identifiers), numbers, single-quoted
// strings ('' escapes a quote), and operators. `--` and `/* */` comments are skipped.

import { invalidQuery } from "./errors.js";

export type Token =
  | { kind: "word"; text: string; upper: string; quoted: boolean; at: number }
  | { kind: "number"; value: number; text: string; at: number }
  | { kind: "string"; value: string; at: number }
  | { kind: "op"; text: string; at: number }
  | { kind: "end"; at: number };

const operators = [
  "<=",
  ">=",
  "!=",
  "<>",
  "==",
  "=",
  "<",
  ">",
  "(",
  ")",
  "[",
  "]",
  ",",
  "*",
  "+",
  "-",
  "/",
  "%",
  ";",
  ".",
];

function isWordStart(char: string): boolean {
  return /[A-Za-z_]/.test(char);
}

function isWordPart(char: string): boolean {
  return /[A-Za-z0-9_$]/.test(char);
}

export function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let at = 0;
  while (at < text.length) {
    const char = text[at]!;
    if (/\s/.test(char)) {
      at++;
      continue;
    }
    if (text.startsWith("--", at)) {
      const end = text.indexOf("\n", at);
      at = end === -1 ? text.length : end + 1;
      continue;
    }
    if (text.startsWith("/*", at)) {
      const end = text.indexOf("*/", at + 2);
      if (end === -1) throw invalidQuery(`Invalid SQL syntax: unterminated comment at position ${at}`);
      at = end + 2;
      continue;
    }
    if (char === "'") {
      let value = "";
      let position = at + 1;
      for (;;) {
        if (position >= text.length) throw invalidQuery(`Invalid SQL syntax: unterminated string at position ${at}`);
        const next = text[position]!;
        if (next === "\\" && position + 1 < text.length) {
          value += text[position + 1];
          position += 2;
        } else if (next === "'") {
          if (text[position + 1] === "'") {
            value += "'";
            position += 2;
          } else break;
        } else {
          value += next;
          position++;
        }
      }
      tokens.push({ kind: "string", value, at });
      at = position + 1;
      continue;
    }
    if (char === "`" || char === '"') {
      const end = text.indexOf(char, at + 1);
      if (end === -1) throw invalidQuery(`Invalid SQL syntax: unterminated identifier at position ${at}`);
      const word = text.slice(at + 1, end);
      tokens.push({ kind: "word", text: word, upper: word.toUpperCase(), quoted: true, at });
      at = end + 1;
      continue;
    }
    if (/[0-9]/.test(char)) {
      const match = /^[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?/.exec(text.slice(at))!;
      tokens.push({ kind: "number", value: Number(match[0]), text: match[0], at });
      at += match[0].length;
      continue;
    }
    if (isWordStart(char)) {
      let end = at + 1;
      while (end < text.length && isWordPart(text[end]!)) end++;
      const word = text.slice(at, end);
      tokens.push({ kind: "word", text: word, upper: word.toUpperCase(), quoted: false, at });
      at = end;
      continue;
    }
    const op = operators.find((candidate) => text.startsWith(candidate, at));
    if (op === undefined) throw invalidQuery(`Invalid SQL syntax: unexpected character '${char}' at position ${at}`);
    tokens.push({ kind: "op", text: op, at });
    at += op.length;
  }
  tokens.push({ kind: "end", at: text.length });
  return tokens;
}
