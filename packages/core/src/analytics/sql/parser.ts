// Parser of the analytics SQL subset (docs/api-v2.md, "Analytics"): exactly one
//   SELECT <items> FROM <table> [WHERE <expr>] [GROUP BY <exprs>] [ORDER BY <expr> [ASC|DESC], ...] [LIMIT <n>]
// Constructs keyraft does not answer (CTEs, subqueries, joins, unions, HAVING, window functions,
// SETTINGS, ...) are refused here with a message naming them. Which tables, columns and
// functions exist is decided by evaluate.ts.

import { AnalyticsSqlError, invalidQuery } from "./errors.js";
import { tokenize, type Token } from "./lexer.js";
import { utf8Encode } from "../../hash/sha256.js";

/** Bytes of query text accepted (upstream's bound, checked before parsing). */
export const analyticsQueryLengthMax = 16_384;
/** Select items per query. */
export const analyticsSelectItemsMax = 64;
/** Syntax nodes per query. */
export const analyticsSyntaxNodesMax = 2_000;

export type BinaryOp = "AND" | "OR" | "=" | "!=" | "<" | "<=" | ">" | ">=" | "+" | "-" | "*" | "/" | "%";

export type Expr =
  | { k: "col"; name: string }
  | { k: "str"; value: string }
  | { k: "num"; value: number }
  | { k: "star" }
  | { k: "array"; items: Expr[] }
  | { k: "call"; name: string; args: Expr[] }
  | { k: "bin"; op: BinaryOp; left: Expr; right: Expr }
  | { k: "not"; expr: Expr }
  | { k: "neg"; expr: Expr }
  | { k: "in"; expr: Expr; list: Expr[]; negated: boolean }
  | { k: "between"; expr: Expr; low: Expr; high: Expr }
  | { k: "interval"; amount: Expr; unit: IntervalUnit }
  | { k: "case"; whens: { when: Expr; then: Expr }[]; otherwise: Expr | null };

export type IntervalUnit = "SECOND" | "MINUTE" | "HOUR" | "DAY" | "WEEK" | "MONTH" | "QUARTER" | "YEAR";
const intervalUnits: Record<string, IntervalUnit> = {
  SECOND: "SECOND",
  SECONDS: "SECOND",
  MINUTE: "MINUTE",
  MINUTES: "MINUTE",
  HOUR: "HOUR",
  HOURS: "HOUR",
  DAY: "DAY",
  DAYS: "DAY",
  WEEK: "WEEK",
  WEEKS: "WEEK",
  MONTH: "MONTH",
  MONTHS: "MONTH",
  QUARTER: "QUARTER",
  QUARTERS: "QUARTER",
  YEAR: "YEAR",
  YEARS: "YEAR",
};

export interface SelectItem {
  expr: Expr;
  alias: string | null;
}

export interface SelectStatement {
  items: SelectItem[];
  table: string;
  where: Expr | null;
  groupBy: Expr[];
  orderBy: { expr: Expr; descending: boolean }[];
  limit: number | null;
}

/** Clause keywords after which an expression ends. */
const clauseWords = new Set([
  "FROM",
  "WHERE",
  "GROUP",
  "ORDER",
  "LIMIT",
  "HAVING",
  "SETTINGS",
  "UNION",
  "EXCEPT",
  "INTERSECT",
  "FORMAT",
  "JOIN",
  "INNER",
  "LEFT",
  "RIGHT",
  "FULL",
  "CROSS",
  "ARRAY",
  "PREWHERE",
  "QUALIFY",
  "WINDOW",
  "SAMPLE",
  "FINAL",
  "OFFSET",
  "ASC",
  "DESC",
  "AS",
  "THEN",
  "ELSE",
  "END",
  "WHEN",
  "AND",
  "OR",
  "BETWEEN",
  "IN",
  "NOT",
  "LIKE",
  "ILIKE",
  "IS",
]);

/** Constructs outside the subset, by their leading keyword. */
const unsupportedClauses: Record<string, string> = {
  HAVING: "HAVING",
  UNION: "UNION",
  EXCEPT: "EXCEPT",
  INTERSECT: "INTERSECT",
  JOIN: "JOIN",
  INNER: "JOIN",
  LEFT: "JOIN",
  RIGHT: "JOIN",
  FULL: "JOIN",
  CROSS: "JOIN",
  ARRAY: "ARRAY JOIN",
  PREWHERE: "PREWHERE",
  QUALIFY: "QUALIFY",
  WINDOW: "WINDOW",
  SAMPLE: "SAMPLE",
  FINAL: "FINAL",
  FORMAT: "FORMAT",
  OFFSET: "OFFSET",
};

function unsupported(construct: string): AnalyticsSqlError {
  return invalidQuery(
    `${construct} is not supported by keyraft's analytics, which answers one SELECT ... FROM <table> [WHERE] [GROUP BY] [ORDER BY] [LIMIT]`,
  );
}

class Parser {
  private position = 0;
  private nodes = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(offset = 0): Token {
    return this.tokens[Math.min(this.position + offset, this.tokens.length - 1)]!;
  }

  private next(): Token {
    const token = this.peek();
    if (token.kind !== "end") this.position++;
    return token;
  }

  private isWord(upper: string, offset = 0): boolean {
    const token = this.peek(offset);
    return token.kind === "word" && !token.quoted && token.upper === upper;
  }

  private isOp(text: string): boolean {
    const token = this.peek();
    return token.kind === "op" && token.text === text;
  }

  private acceptWord(upper: string): boolean {
    if (!this.isWord(upper)) return false;
    this.position++;
    return true;
  }

  private acceptOp(text: string): boolean {
    if (!this.isOp(text)) return false;
    this.position++;
    return true;
  }

  private expectWord(upper: string): void {
    if (!this.acceptWord(upper)) throw this.unexpected(`expected ${upper}`);
  }

  private expectOp(text: string): void {
    if (!this.acceptOp(text)) throw this.unexpected(`expected '${text}'`);
  }

  unexpected(expected: string): AnalyticsSqlError {
    const token = this.peek();
    const shown =
      token.kind === "end"
        ? "end of query"
        : `'${token.kind === "word" ? token.text : token.kind === "string" ? token.value : token.kind === "number" ? token.text : token.text}'`;
    return invalidQuery(`Invalid SQL syntax: unexpected ${shown} at position ${token.at}, ${expected}`);
  }

  private node<T extends Expr>(expr: T): T {
    this.nodes++;
    if (this.nodes > analyticsSyntaxNodesMax)
      throw invalidQuery(`the query has more than ${analyticsSyntaxNodesMax} syntax nodes`);
    return expr;
  }

  statement(): SelectStatement {
    if (this.isWord("WITH")) throw unsupported("WITH (a common table expression)");
    if (!this.isWord("SELECT")) {
      if (this.peek().kind === "end") throw invalidQuery("the query is empty");
      throw new AnalyticsSqlError("invalid_analytics_query_type", "Only SELECT queries are allowed");
    }
    this.next();
    if (this.isWord("DISTINCT")) throw unsupported("SELECT DISTINCT");
    const items: SelectItem[] = [];
    do {
      items.push(this.selectItem());
      if (items.length > analyticsSelectItemsMax)
        throw invalidQuery(`a query may select at most ${analyticsSelectItemsMax} columns`);
    } while (this.acceptOp(","));
    this.expectWord("FROM");
    if (this.isOp("(")) throw unsupported("A subquery");
    const table = this.tableName();
    this.rejectUnsupported();
    const where = this.acceptWord("WHERE") ? this.expr() : null;
    this.rejectUnsupported();
    const groupBy: Expr[] = [];
    if (this.acceptWord("GROUP")) {
      this.expectWord("BY");
      do groupBy.push(this.expr());
      while (this.acceptOp(","));
    }
    this.rejectUnsupported();
    const orderBy: { expr: Expr; descending: boolean }[] = [];
    if (this.acceptWord("ORDER")) {
      this.expectWord("BY");
      do {
        const expr = this.expr();
        const descending = this.acceptWord("DESC") ? true : (this.acceptWord("ASC"), false);
        orderBy.push({ expr, descending });
      } while (this.acceptOp(","));
    }
    this.rejectUnsupported();
    let limit: number | null = null;
    if (this.acceptWord("LIMIT")) {
      const token = this.next();
      if (token.kind !== "number" || !Number.isSafeInteger(token.value))
        throw invalidQuery("LIMIT takes a whole number");
      if (this.isOp(",")) throw unsupported("LIMIT <offset>, <count>");
      limit = token.value;
    }
    this.rejectUnsupported();
    if (this.isWord("SETTINGS")) throw invalidQuery("SETTINGS are not allowed");
    this.acceptOp(";");
    if (this.peek().kind !== "end") {
      if (
        this.tokens[this.position - 1]?.kind === "op" &&
        (this.tokens[this.position - 1] as { text: string }).text === ";"
      )
        throw invalidQuery("Only one statement is allowed");
      throw this.unexpected("expected the end of the query");
    }
    return { items, table, where, groupBy, orderBy, limit };
  }

  private rejectUnsupported(): void {
    const token = this.peek();
    if (token.kind === "word" && !token.quoted) {
      const construct = unsupportedClauses[token.upper];
      if (construct !== undefined) throw unsupported(construct);
    }
  }

  private tableName(): string {
    const first = this.next();
    if (first.kind !== "word") throw invalidQuery("Invalid SQL syntax: expected a table name after FROM");
    let name = first.text;
    while (this.acceptOp(".")) {
      const part = this.next();
      if (part.kind !== "word") throw invalidQuery("Invalid SQL syntax: expected a table name after '.'");
      name += `.${part.text}`;
    }
    if (this.isOp("(")) throw new AnalyticsSqlError("invalid_analytics_function", "Table functions are not allowed");
    if (
      this.acceptWord("AS") ||
      (this.peek().kind === "word" && !clauseWords.has((this.peek() as { upper: string }).upper))
    )
      throw unsupported("A table alias");
    return name;
  }

  private selectItem(): SelectItem {
    const expr = this.expr();
    if (this.acceptWord("AS")) return { expr, alias: this.identifier() };
    const token = this.peek();
    if (token.kind === "word" && (token.quoted || !clauseWords.has(token.upper)))
      return { expr, alias: this.identifier() };
    return { expr, alias: null };
  }

  private identifier(): string {
    const token = this.next();
    if (token.kind !== "word") throw invalidQuery(`Invalid SQL syntax: expected a name at position ${token.at}`);
    return token.text;
  }

  expr(): Expr {
    return this.orExpr();
  }

  private orExpr(): Expr {
    let left = this.andExpr();
    while (this.acceptWord("OR")) left = this.node({ k: "bin", op: "OR", left, right: this.andExpr() });
    return left;
  }

  private andExpr(): Expr {
    let left = this.notExpr();
    while (this.acceptWord("AND")) left = this.node({ k: "bin", op: "AND", left, right: this.notExpr() });
    return left;
  }

  private notExpr(): Expr {
    if (this.acceptWord("NOT")) return this.node({ k: "not", expr: this.notExpr() });
    return this.comparison();
  }

  private comparison(): Expr {
    const left = this.additive();
    const token = this.peek();
    if (token.kind === "op" && ["=", "==", "!=", "<>", "<", "<=", ">", ">="].includes(token.text)) {
      this.next();
      const op = (token.text === "==" ? "=" : token.text === "<>" ? "!=" : token.text) as BinaryOp;
      return this.node({ k: "bin", op, left, right: this.additive() });
    }
    const negated = this.isWord("NOT") && (this.isWord("IN", 1) || this.isWord("BETWEEN", 1) || this.isWord("LIKE", 1));
    if (negated) this.next();
    if (this.acceptWord("IN")) {
      this.expectOp("(");
      if (this.isWord("SELECT")) throw unsupported("A subquery");
      const list: Expr[] = [];
      if (!this.isOp(")")) {
        do list.push(this.additive());
        while (this.acceptOp(","));
      }
      this.expectOp(")");
      return this.node({ k: "in", expr: left, list, negated });
    }
    if (this.acceptWord("BETWEEN")) {
      const low = this.additive();
      this.expectWord("AND");
      const between = this.node<Expr>({ k: "between", expr: left, low, high: this.additive() });
      return negated ? this.node({ k: "not", expr: between }) : between;
    }
    if (this.isWord("LIKE") || this.isWord("ILIKE")) throw unsupported("LIKE");
    if (this.isWord("IS")) throw unsupported("IS [NOT] NULL");
    return left;
  }

  private additive(): Expr {
    let left = this.multiplicative();
    for (;;) {
      if (this.acceptOp("+")) left = this.node({ k: "bin", op: "+", left, right: this.multiplicative() });
      else if (this.acceptOp("-")) left = this.node({ k: "bin", op: "-", left, right: this.multiplicative() });
      else return left;
    }
  }

  private multiplicative(): Expr {
    let left = this.unary();
    for (;;) {
      const token = this.peek();
      if (token.kind === "op" && (token.text === "*" || token.text === "/" || token.text === "%")) {
        this.next();
        left = this.node({ k: "bin", op: token.text as BinaryOp, left, right: this.unary() });
      } else return left;
    }
  }

  private unary(): Expr {
    if (this.acceptOp("-")) return this.node({ k: "neg", expr: this.unary() });
    return this.primary();
  }

  private primary(): Expr {
    const token = this.next();
    switch (token.kind) {
      case "number":
        return this.node({ k: "num", value: token.value });
      case "string":
        return this.node({ k: "str", value: token.value });
      case "op":
        if (token.text === "(") {
          if (this.isWord("SELECT") || this.isWord("WITH")) throw unsupported("A subquery");
          const inner = this.expr();
          this.expectOp(")");
          return inner;
        }
        if (token.text === "[") {
          const items: Expr[] = [];
          if (!this.isOp("]")) {
            do items.push(this.additive());
            while (this.acceptOp(","));
          }
          this.expectOp("]");
          return this.node({ k: "array", items });
        }
        if (token.text === "*") return this.node({ k: "star" });
        this.position--;
        throw this.unexpected("expected an expression");
      case "word":
        return this.wordExpr(token);
      case "end":
        throw invalidQuery("Invalid SQL syntax: the query ends where an expression was expected");
      default: {
        const unreachable: never = token;
        throw new Error(`primary: unknown token ${JSON.stringify(unreachable)}`);
      }
    }
  }

  private wordExpr(token: Extract<Token, { kind: "word" }>): Expr {
    if (!token.quoted) {
      if (token.upper === "INTERVAL") {
        const amount = this.additive();
        const unit = this.next();
        const known = unit.kind === "word" ? intervalUnits[unit.upper] : undefined;
        if (known === undefined) throw invalidQuery("INTERVAL takes a unit: SECOND, MINUTE, HOUR, DAY, WEEK or MONTH");
        return this.node({ k: "interval", amount, unit: known });
      }
      if (token.upper === "CASE") return this.caseExpr();
      if (token.upper === "SELECT") throw unsupported("A subquery");
      if (token.upper === "NULL") throw unsupported("NULL");
    }
    if (this.isOp("(")) {
      this.next();
      const args: Expr[] = [];
      if (this.isWord("DISTINCT")) throw unsupported(`${token.text}(DISTINCT ...)`);
      if (!this.isOp(")")) {
        do args.push(this.expr());
        while (this.acceptOp(","));
      }
      this.expectOp(")");
      if (this.isWord("OVER")) throw unsupported("A window function (OVER)");
      return this.node({ k: "call", name: token.text, args });
    }
    let name = token.text;
    while (this.acceptOp(".")) name += `.${this.identifier()}`;
    return this.node({ k: "col", name });
  }

  private caseExpr(): Expr {
    if (!this.isWord("WHEN")) throw unsupported("CASE <value> WHEN (write CASE WHEN <condition>)");
    const whens: { when: Expr; then: Expr }[] = [];
    while (this.acceptWord("WHEN")) {
      const when = this.expr();
      this.expectWord("THEN");
      whens.push({ when, then: this.expr() });
    }
    const otherwise = this.acceptWord("ELSE") ? this.expr() : null;
    this.expectWord("END");
    return this.node({ k: "case", whens, otherwise });
  }
}

/** Parses one query of the subset; throws AnalyticsSqlError. */
export function parseAnalyticsSql(text: string): SelectStatement {
  if (utf8Encode(text).length > analyticsQueryLengthMax)
    throw invalidQuery(`Analytics query exceeds the maximum length of ${analyticsQueryLengthMax} bytes`);
  if (text.trim() === "") throw invalidQuery("the query is empty");
  return new Parser(tokenize(text)).statement();
}
