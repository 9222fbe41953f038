import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decodeLogKey, encodeLogKey } from "../src/storage/keys.js";
import { LevelStorage } from "../src/storage/level-storage.js";
import { MemoryStorage } from "../src/storage/memory-storage.js";
import { entry, storageConformance, type StorageHarness } from "./storage-conformance.js";

storageConformance("MemoryStorage", async (): Promise<StorageHarness> => {
  return {
    durable: false,
    open: async (options = {}) => new MemoryStorage(options),
    cleanup: async () => undefined,
  };
});

storageConformance("LevelStorage", async (): Promise<StorageHarness> => {
  const path = await mkdtemp(join(tmpdir(), "keyraft-level-"));
  return {
    durable: true,
    open: (options = {}) => LevelStorage.open({ path, ...options }),
    cleanup: () => rm(path, { recursive: true, force: true }),
  };
});

describe("log keys", () => {
  it("are fixed-width big-endian: byte order equals numeric order", () => {
    const indexes = [0, 1, 2, 9, 10, 255, 256, 65_535, 2 ** 32 - 1, 2 ** 32, 2 ** 40 + 7, Number.MAX_SAFE_INTEGER];
    const keys = indexes.map(encodeLogKey);
    expect(keys.every((key) => key.byteLength === 8)).toBe(true);
    const sorted = [...keys].sort((a, b) => Buffer.compare(a, b));
    expect(sorted.map(decodeLogKey)).toEqual(indexes);
    expect(() => encodeLogKey(-1)).toThrow();
    expect(() => encodeLogKey(1.5)).toThrow();
  });
});

describe("LevelStorage on disk", () => {
  it("reads a large log back in index order after reopen (keys 2 < 10 < 256 numerically)", async () => {
    const path = await mkdtemp(join(tmpdir(), "keyraft-level-"));
    try {
      const storage = await LevelStorage.open({ path });
      const entries = Array.from({ length: 300 }, (_, i) => entry(i + 1, 1));
      await storage.append(entries, { term: 1, vote: "", commit: 300 }, true);
      await storage.close();
      const reopened = await LevelStorage.open({ path });
      expect(reopened.entries(1, 301, Infinity).map((e) => e.index)).toEqual(entries.map((e) => e.index));
      await reopened.close();
    } finally {
      await rm(path, { recursive: true, force: true });
    }
  });
});
