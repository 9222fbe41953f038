// The v2 permission query string: "a AND (b OR c)". AND binds tighter than OR, both
// left-associative, keywords in any letter case and only as whole words, parentheses group.
// A permission is a maximal run of ASCII letters, digits and `. _ - * : /`; `*` is literal.
// Whitespace is space, tab, CR or LF. Positions in error messages are 0-based UTF-8 byte
// offsets, the end of input being the byte length. Parses to the same PermissionQuery tree as
// v1's JSON form, so both APIs evaluate permissions with one evaluator.
//
//   query   := orExpr EOF
//   orExpr  := andExpr ( OR andExpr )*
//   andExpr := primary ( AND primary )*
//   primary := PERMISSION | "(" orExpr ")"

import { assert } from "../assert.js";
import { permissionQueryTextLengthMax } from "../limits.js";
import type { PermissionQuery } from "./query.js";

export type PermissionQueryStringParse = { ok: true; query: PermissionQuery } | { ok: false; message: string };

type TokenKind = "permission" | "and" | "or" | "lparen" | "rparen" | "eof" | "invalid";

interface Token {
  kind: TokenKind;
  text: string;
  /** UTF-8 byte offset of the token's first character. */
  position: number;
}

function isPermissionChar(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) || // 0-9
    (code >= 0x41 && code <= 0x5a) || // A-Z
    (code >= 0x61 && code <= 0x7a) || // a-z
    code === 0x2e || // .
    code === 0x5f || // _
    code === 0x2d || // -
    code === 0x2a || // *
    code === 0x3a || // :
    code === 0x2f // /
  );
}

function isWhitespace(code: number): boolean {
  return code === 0x20 || code === 0x09 || code === 0x0a || code === 0x0d;
}

/** Tokens of `text`, ending with `eof` or at the first `invalid` one. */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let index = 0;
  let position = 0;
  while (index < text.length) {
    const code = text.charCodeAt(index);
    if (isWhitespace(code)) {
      index++;
      position++;
    } else if (code === 0x28 || code === 0x29) {
      tokens.push({ kind: code === 0x28 ? "lparen" : "rparen", text: text[index]!, position });
      index++;
      position++;
    } else if (isPermissionChar(code)) {
      let end = index;
      while (end < text.length && isPermissionChar(text.charCodeAt(end))) end++;
      const word = text.slice(index, end);
      const upper = word.toUpperCase();
      const kind = upper === "AND" ? "and" : upper === "OR" ? "or" : "permission";
      tokens.push({ kind, text: word, position });
      position += end - index; // ASCII only: one byte per character
      index = end;
    } else {
      const codePoint = text.codePointAt(index)!;
      tokens.push({ kind: "invalid", text: String.fromCodePoint(codePoint), position });
      return tokens;
    }
  }
  tokens.push({ kind: "eof", text: "", position });
  return tokens;
}

class SyntaxError {
  constructor(readonly message: string) {}
}

const allowedCharacters =
  "Only letters, numbers, dots, underscores, hyphens, slashes, colons, asterisks, and parentheses are allowed.";

const invalidCharacter = (token: Token) =>
  new SyntaxError(
    `Invalid character '${token.text}' found in query at position ${token.position}. ${allowedCharacters}`,
  );

class Parser {
  private index = 0;
  constructor(private readonly tokens: readonly Token[]) {}

  private get current(): Token {
    return this.tokens[Math.min(this.index, this.tokens.length - 1)]!;
  }

  parse(): PermissionQuery {
    if (this.current.kind === "eof") {
      throw new SyntaxError("Unexpected end of input. Please provide a valid permission query.");
    }
    const query = this.orExpression();
    const rest = this.current;
    if (rest.kind === "invalid") throw invalidCharacter(rest);
    if (rest.kind !== "eof") {
      throw new SyntaxError(
        `Unexpected token '${rest.text}' at position ${rest.position}. The query appears to have extra content after a valid expression.`,
      );
    }
    return query;
  }

  private orExpression(): PermissionQuery {
    const children = [this.andExpression()];
    while (this.current.kind === "or") {
      this.index++;
      children.push(this.andExpression());
    }
    return children.length === 1 ? children[0]! : { or: children };
  }

  private andExpression(): PermissionQuery {
    const children = [this.primary()];
    while (this.current.kind === "and") {
      this.index++;
      children.push(this.primary());
    }
    return children.length === 1 ? children[0]! : { and: children };
  }

  private primary(): PermissionQuery {
    const token = this.current;
    switch (token.kind) {
      case "permission":
        this.index++;
        return token.text;
      case "lparen": {
        this.index++;
        if (this.current.kind === "rparen") {
          throw new SyntaxError(
            `Empty parentheses found at position ${this.current.position}. Parentheses must contain at least one permission or expression.`,
          );
        }
        const inner = this.orExpression();
        const closing: Token = this.current;
        if (closing.kind === "invalid") throw invalidCharacter(closing);
        if (closing.kind !== "rparen") {
          throw new SyntaxError(
            `Missing closing parenthesis ')' at position ${closing.position}. Every opening parenthesis must have a matching closing parenthesis.`,
          );
        }
        this.index++;
        return inner;
      }
      case "eof":
        throw new SyntaxError("Unexpected end of query. Expected a permission identifier or opening parenthesis.");
      case "invalid":
        throw invalidCharacter(token);
      case "and":
      case "or":
      case "rparen":
        throw new SyntaxError(
          `Unexpected token '${token.text}' at position ${token.position}. Expected a permission identifier or opening parenthesis.`,
        );
      default: {
        const unknown: never = token.kind;
        throw new Error(`primary: unknown token ${String(unknown)}`);
      }
    }
  }
}

/**
 * Parses a v2 permission query string. Never throws: a malformed query (or one longer than
 * `permissionQueryTextLengthMax`) is `{ok: false, message}` with upstream's wording.
 */
export function parsePermissionQueryString(text: string): PermissionQueryStringParse {
  if (text.length > permissionQueryTextLengthMax) {
    return { ok: false, message: `The permission query is longer than ${permissionQueryTextLengthMax} characters.` };
  }
  try {
    const query = new Parser(tokenize(text)).parse();
    assert(typeof query === "string" || ("and" in query ? query.and.length > 1 : query.or.length > 1), "parsed node");
    return { ok: true, query };
  } catch (error) {
    if (error instanceof SyntaxError) return { ok: false, message: error.message };
    throw error;
  }
}

/** The canonical text of a query: every AND/OR group parenthesized (parses back to the same tree). */
export function formatPermissionQuery(query: PermissionQuery): string {
  if (typeof query === "string") return query;
  const [operator, children] = "and" in query ? [" AND ", query.and] : [" OR ", query.or];
  return children
    .map((child) => (typeof child === "string" ? child : `(${formatPermissionQuery(child)})`))
    .join(operator);
}
