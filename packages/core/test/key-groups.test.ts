// Where a key goes: its hash decides its key group, which is stored in every checkpoint's keyed
// state, so the hash of a key must never change between releases. Integer keys are hashed from
// their digits without making a string; that must give what hashing their string form gives.
import { describe, expect, it } from "vitest";
import { ConfigurationError } from "../src/errors.ts";
import { hashKey, KeyGroupAssigner, keyGroupOf } from "../src/operators/key-groups.ts";
import { KeyedStateStore } from "../src/operators/keyed-state.ts";
import { StreamJob } from "../src/runtime/api/stream-job.ts";
import { smallInteger } from "../src/runtime/engine/exchange/exchange-codec.ts";

/** A number key hashes as the text `n${key}` does: the form checkpoints were first written with. */
function hashOfStringForm(key: string | number): number {
  return hashKey(typeof key === "number" ? `n${key}` : key);
}

describe("hashKey", () => {
  it("gives the hashes checkpoints were written with", () => {
    const pinned: Array<[string | number, number]> = [
      [0, 793400324],
      [1, 2855225089],
      [-1, 2566141547],
      [1023, 4175201322],
      [2147483647, 1607494763],
      [-2147483648, 3507857289],
      [9007199254740991, 1213202761],
      [1.5, 9528245],
      ["user-42", 2083131798],
      ["", 2872998923],
    ];
    for (const [key, hash] of pinned) expect([key, hashKey(key)]).toEqual([key, hash]);
  });

  it("hashes an integer key from its digits as it hashes the key's string form", () => {
    const keys: Array<string | number> = [-0, 9, 10, 99, 100, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 1e21, -2.25];
    keys.push(Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, "n12", "12");
    for (let i = -2000; i < 2000; i++) keys.push(i);
    // Spread over the whole safe range, deterministically.
    for (let i = 1; i < 2000; i++) keys.push(((i * 2654435761) % 2 ** 32) * 2 ** 20 * (i % 2 === 0 ? 1 : -1));
    const wrong = keys.filter((key) => hashKey(key) !== hashOfStringForm(key));
    expect(wrong).toEqual([]);
  });
});

describe("KeyGroupAssigner", () => {
  it("gives every key the group keyGroupOf gives it, the second time (remembered) as the first", () => {
    const keys: Array<string | number> = [0, 1, 65535, 65536, -1, 1.5, 2 ** 31, "7", "user-1"];
    for (let i = 0; i < 70000; i += 13) keys.push(i);
    for (const maxParallelism of [1, 7, 128, 32768]) {
      const assigner = new KeyGroupAssigner(maxParallelism);
      for (const pass of ["first", "second"]) {
        const wrong = keys.filter((key) => assigner.groupOf(key) !== keyGroupOf(key, maxParallelism));
        expect([maxParallelism, pass, wrong]).toEqual([maxParallelism, pass, []]);
      }
    }
  });

  it("keeps groups of different maxParallelism apart", () => {
    const small = new KeyGroupAssigner(2);
    const large = new KeyGroupAssigner(32768);
    const keys = Array.from({ length: 500 }, (_, i) => i);
    for (const key of keys) small.groupOf(key);
    expect(keys.map((key) => large.groupOf(key))).toEqual(keys.map((key) => keyGroupOf(key, 32768)));
  });

  it("refuses a job with more key groups than 32,768, naming maxParallelism", () => {
    const job = () =>
      new StreamJob({ name: "too-many-groups", maxParallelism: 32769, checkpoint: { storage: "unused" } });
    expect(job).toThrow(ConfigurationError);
    expect(job).toThrow(/maxParallelism/);
    expect(
      () => new StreamJob({ name: "most-groups", maxParallelism: 32768, checkpoint: { storage: "unused" } }),
    ).not.toThrow();
  });
});

describe("keyed state", () => {
  it("keeps each key's value apart when keys alternate within and across key groups", () => {
    const store = new KeyedStateStore<number>(128);
    const keys = [1, 2, 3, "a", "b", 1, "a", 4, 4, 2];
    const expected = new Map<string | number, number>();
    for (const key of keys) {
      const next = (store.get(key) ?? 0) + 1;
      store.set(key, next);
      expected.set(key, next);
    }
    for (const [key, value] of expected) expect([key, store.get(key)]).toEqual([key, value]);
    store.delete(4);
    expect(store.get(4)).toBeUndefined();
    expect(store.get(1)).toBe(2);
  });

  it("reads restored state, not the maps it held before the restore", () => {
    const store = new KeyedStateStore<string>(128);
    store.set(7, "before");
    const group = keyGroupOf(7, 128);
    store.restore([{ groups: { [group]: [[7, "restored"]] } }], { start: 0, end: 127 });
    expect(store.get(7)).toBe("restored");
  });
});

describe("smallInteger", () => {
  it("keeps every value as it was: whole numbers read from a Float64Array, fractions, text", () => {
    const numbers = Float64Array.of(0, 42, -7, 2 ** 31, 1.5, Number.NaN);
    expect([...numbers].map(smallInteger)).toEqual([0, 42, -7, 2 ** 31, 1.5, Number.NaN]);
    expect(smallInteger("12")).toBe("12");
  });
});
