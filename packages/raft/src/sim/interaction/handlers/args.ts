import { assert } from "../../../core/assert.js";
import type { CommandArgs } from "../datadriven.js";

export function idList(value: string | undefined): string[] {
  return value === undefined || value === "" ? [] : value.split(",");
}

export function flag(args: CommandArgs, name: string, fallback: boolean): boolean {
  const value = args.named.get(name);
  if (value === undefined) return fallback;
  assert(value === "true" || value === "false", `${name} must be true or false`);
  return value === "true";
}

export function intArg(args: CommandArgs, name: string, fallback: number): number {
  const value = args.named.get(name);
  if (value === undefined) return fallback;
  const parsed = Number(value);
  assert(Number.isInteger(parsed), `${name} must be an integer`);
  return parsed;
}

export function positional(args: CommandArgs, index: number, what: string): string {
  const value = args.positional[index];
  assert(value !== undefined, `${args.command}: missing ${what}`);
  return value;
}
