// The key table's per-slot arrays (key-table.ts), held in pages so that growing one never copies
// it. A flat typed array doubled at 524,288 slots copied 11 MB of slot arrays into memory the
// process had never touched: on a VM where a first write to a page costs about 15 µs (measured
// here: a fresh 1 MiB filled in 3.5-4 ms), that one insert stopped the loop for 15-40 ms. A new
// page is touched slot by slot as keys arrive, so its cost is spread over 65,536 inserts.
//
// Below one page a column is a single array that doubles (at most 256 KiB copied), so the many
// small tables of tests and empty states do not each hold a full page.

import { assert } from "../assert.js";

/** Slots per page: 65,536 (256 KiB of a 32-bit column). */
export const slotsPerPage = 1 << 16;
const pageShift = 16;
const pageMask = slotsPerPage - 1;
/** Slots a column holds before its first growth. */
const firstPageSlots = 1024;

/**
 * One value (32 bits, unsigned) per slot: slot i is element i & pageMask of page i >>> pageShift.
 * One class for every column (the 8-bit scan flags too, 3 bytes a key more): the hot lookups then
 * see one array type at each access.
 */
export class SlotColumn {
  private pages: Uint32Array[] = [new Uint32Array(firstPageSlots)];

  /** Slots the column has room for. */
  get capacity(): number {
    return this.pages.length === 1 ? this.pages[0]!.length : this.pages.length * slotsPerPage;
  }

  get(slot: number): number {
    return this.pages[slot >>> pageShift]![slot & pageMask]!;
  }

  set(slot: number, value: number): void {
    this.pages[slot >>> pageShift]![slot & pageMask] = value;
  }

  /** Room for at least `slots` slots: the first page doubles up to a full page, then pages are added. */
  ensure(slots: number): void {
    while (this.capacity < slots) {
      const first = this.pages[0]!;
      if (this.pages.length === 1 && first.length < slotsPerPage) {
        const grown = new Uint32Array(Math.min(slotsPerPage, first.length * 2));
        grown.set(first);
        this.pages[0] = grown;
      } else this.pages.push(new Uint32Array(slotsPerPage));
    }
    assert(this.capacity >= slots, "SlotColumn.ensure: room for the slots asked");
  }

  /** Sets slots [from, to) to `value`. */
  fill(value: number, from: number, to: number): void {
    for (let slot = from; slot < to;) {
      const page = slot >>> pageShift;
      const pageEnd = Math.min(to, (page + 1) * slotsPerPage);
      this.pages[page]!.fill(value, slot & pageMask, pageEnd - page * slotsPerPage);
      slot = pageEnd;
    }
  }
}
