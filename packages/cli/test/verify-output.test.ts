// What the demo's check makes of committed output: lost, duplicated and phantom ids, and keyed
// state that numbered a key's records wrongly.
import { describe, expect, it } from "vitest";
import { RecordTally } from "../src/demo/verify-output.ts";

function tally(records: number, lines: Array<{ id: number; key: number; seq: number } | undefined>) {
  const t = new RecordTally(records);
  for (const line of lines) t.add(line);
  return t.result(1);
}

describe("the demo's output check", () => {
  it("counts lost, duplicated and phantom ids; a key numbered 1…n is consistent", () => {
    const check = tally(4, [
      { id: 0, key: 0, seq: 1 },
      { id: 2, key: 0, seq: 2 },
      { id: 1, key: 1, seq: 1 },
      { id: 9, key: 1, seq: 2 },
      undefined,
    ]);
    expect(check).toEqual({ committed: 3, lost: 1, duplicated: 0, phantom: 2, keysWithBadSequence: 0, files: 1 });
  });

  it("a duplicate that carries its record's number again is a duplicate, not a keyed-state error", () => {
    // At-least-once output from aligned checkpoints: a replay numbers each record as before.
    const check = tally(2, [
      { id: 0, key: 0, seq: 1 },
      { id: 1, key: 0, seq: 2 },
      { id: 1, key: 0, seq: 2 },
    ]);
    expect(check).toMatchObject({ duplicated: 1, keysWithBadSequence: 0 });
  });

  it("a record numbered differently by two copies, or a gap in a key's numbers, marks the key wrong", () => {
    // Unaligned checkpoints: state counted record 1 before the crash and counts it again on replay.
    const renumbered = tally(3, [
      { id: 0, key: 0, seq: 1 },
      { id: 1, key: 0, seq: 2 },
      { id: 1, key: 0, seq: 3 },
      { id: 2, key: 0, seq: 3 },
    ]);
    expect(renumbered).toMatchObject({ duplicated: 1, keysWithBadSequence: 1 });
    const gap = tally(2, [
      { id: 0, key: 0, seq: 1 },
      { id: 1, key: 0, seq: 3 },
    ]);
    expect(gap).toMatchObject({ duplicated: 0, keysWithBadSequence: 1 });
  });
});
