// slot-columns.ts against a plain array: values kept across the first page's doublings and the
// pages added after it, and fills that cross page boundaries.
import { describe, expect, it } from "vitest";
import { SlotColumn, slotsPerPage } from "../src/keystate/slot-columns.js";

describe("SlotColumn", () => {
  it("keeps every value while it grows, and fills ranges across pages", () => {
    const column = new SlotColumn();
    const model: number[] = [];
    const slots = slotsPerPage * 2 + 1_000;
    for (let slot = 0; slot < slots; slot++) {
      if (column.capacity <= slot) column.ensure(slot + 1);
      const value = (Math.imul(slot, 2654435761) >>> 0) % 0xffffffff;
      column.set(slot, value);
      model.push(value);
    }
    expect(column.capacity).toBe(slotsPerPage * 3);
    for (const [from, to] of [
      [10, 20],
      [slotsPerPage - 5, slotsPerPage + 5],
      [100, slotsPerPage * 2 + 500],
    ] as const) {
      column.fill(7, from, to);
      model.fill(7, from, to);
    }
    for (let slot = 0; slot < slots; slot++)
      if (column.get(slot) !== model[slot]) expect(column.get(slot)).toBe(model[slot]);
    expect(column.get(slots - 1)).toBe(model[slots - 1]);
  });

  it("starts small and doubles its first page before adding pages", () => {
    const column = new SlotColumn();
    expect(column.capacity).toBe(1024);
    column.set(1023, 42);
    column.ensure(3000);
    expect(column.capacity).toBe(4096);
    expect(column.get(1023)).toBe(42);
    column.ensure(slotsPerPage + 1);
    expect(column.capacity).toBe(slotsPerPage * 2);
    expect(column.get(1023)).toBe(42);
  });
});
