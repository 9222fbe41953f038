// The identity record (driver/peer-identity.ts) as a small JSON file inside the Raft data
// directory, so wiping the directory wipes the incarnation with it (and restoring an older copy of
// the directory restores the older record: its peers' marks, not this node's, detect that). Written atomically: a
// temporary file, fsynced, renamed over the old one, and the directory fsynced.

import { closeSync, fsyncSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import type { IdentityRecord, IdentityStore, PeerMark } from "../driver/peer-identity.js";
import { RaftNodeError } from "../errors.js";

/** Largest identity file read (a few hundred peers fit easily). */
export const identityFileBytesMax = 64 << 10;

export class IdentityFile implements IdentityStore {
  constructor(private readonly path: string) {}

  load(): IdentityRecord | null {
    let text: string;
    try {
      text = readFileSync(this.path, "utf8");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw error;
    }
    if (text.length > identityFileBytesMax) throw corrupt(this.path, "too large");
    const value: unknown = JSON.parse(text);
    if (!isRecord(value)) throw corrupt(this.path, "not an identity record");
    return value;
  }

  save(record: IdentityRecord): void {
    const temporary = `${this.path}.tmp`;
    const fd = openSync(temporary, "w");
    try {
      writeSync(fd, JSON.stringify(record));
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, this.path);
    const dir = openSync(dirname(this.path), "r");
    try {
      fsyncSync(dir);
    } finally {
      closeSync(dir);
    }
  }
}

function corrupt(path: string, why: string): RaftNodeError {
  return new RaftNodeError("RAFT_ERR_STORAGE_CORRUPT", `identity file ${path}: ${why}`);
}

function isRecord(value: unknown): value is IdentityRecord {
  if (typeof value !== "object" || value === null) return false;
  const record = value as Record<string, unknown>;
  const peers = record["peers"];
  return (
    typeof record["cluster"] === "string" &&
    typeof record["incarnation"] === "string" &&
    typeof record["confIndex"] === "number" &&
    typeof peers === "object" &&
    peers !== null &&
    Object.values(peers).every((incarnation) => typeof incarnation === "string") &&
    (record["marks"] === undefined || isMarks(record["marks"])) &&
    (record["admitted"] === undefined || typeof record["admitted"] === "boolean") &&
    (record["admittedBy"] === undefined ||
      (Array.isArray(record["admittedBy"]) && record["admittedBy"].every((id) => typeof id === "string")))
  );
}

/** Marks are absent from files written before rolled-back copies were detected. */
function isMarks(value: unknown): value is Record<string, PeerMark> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  return Object.values(value).every((mark: unknown) => {
    if (typeof mark !== "object" || mark === null) return false;
    const fields = mark as Record<string, unknown>;
    return ["term", "logIndex", "voteTerm"].every((name) => {
      const field = fields[name];
      return typeof field === "number" && Number.isSafeInteger(field) && field >= 0;
    });
  });
}
