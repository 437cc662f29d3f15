/**
 * The contract every `ConditionalRecord` adapter keeps (docs/design.md §2, Shards), run
 * against its real store: an adapter's test file is a call of {@link conditionalRecordSuite}.
 * Races are real: each contender is an instance of its own (its own client or connection),
 * as two processes competing for a shard would be.
 */
import { randomUUID } from "node:crypto";
import type { ConditionalRecord } from "@exactly/core";
import { afterEach, describe, expect, it } from "vitest";

/** Opens a record at `location`; every test passes a fresh one, and the same one to see another instance's writes. */
export type MakeRecord = (location: string) => ConditionalRecord<unknown>;

/** How many contenders each race has. */
const CONTENDERS = 8;

export function conditionalRecordSuite(name: string, makeRecord: MakeRecord): void {
  describe(`ConditionalRecord: ${name}`, () => {
    const opened: ConditionalRecord<unknown>[] = [];
    afterEach(async () => {
      await Promise.all(opened.splice(0).map((record) => record.close?.()));
    });

    const open = (location: string) => {
      const record = makeRecord(location);
      opened.push(record);
      return record;
    };
    const fresh = () => `record-${randomUUID().slice(0, 8)}`;

    it("reads undefined where nothing was written", async () => {
      expect(await open(fresh()).read()).toBeUndefined();
    });

    it("creates a record only if it is absent", async () => {
      const record = open(fresh());
      const version = await record.replace(undefined, { owner: "a" });
      expect(version).toEqual(expect.any(String));
      expect(await record.replace(undefined, { owner: "b" })).toBeUndefined();
      expect(await record.read()).toEqual({ value: { owner: "a" }, version });
    });

    it("lets exactly one of concurrent creators win", async () => {
      const location = fresh();
      const contenders = Array.from({ length: CONTENDERS }, () => open(location));
      const versions = await Promise.all(contenders.map((record, i) => record.replace(undefined, { owner: i })));
      const winners = versions.flatMap((version, i) => (version === undefined ? [] : [{ version, owner: i }]));
      expect(winners).toHaveLength(1);
      expect(await open(location).read()).toEqual({
        value: { owner: winners[0]?.owner },
        version: winners[0]?.version,
      });
    });

    it("replaces the record at its current version, giving a new version", async () => {
      const record = open(fresh());
      const first = await record.replace(undefined, { epoch: 1 });
      const second = await record.replace(first, { epoch: 2 });
      expect(second).toEqual(expect.any(String));
      expect(second).not.toBe(first);
      expect(await record.read()).toEqual({ value: { epoch: 2 }, version: second });
    });

    it("gives a new version to a replacement with an equal value", async () => {
      const record = open(fresh());
      const first = await record.replace(undefined, { epoch: 1 });
      const second = await record.replace(first, { epoch: 1 });
      expect(second).toEqual(expect.any(String));
      expect(second).not.toBe(first);
      // Were versions derived from the value alone, this stale write would succeed.
      expect(await record.replace(first, { epoch: 1 })).toBeUndefined();
    });

    it("refuses a replacement at a stale version and leaves the value as it is", async () => {
      const record = open(fresh());
      const first = await record.replace(undefined, { epoch: 1 });
      const second = await record.replace(first, { epoch: 2 });
      expect(await record.replace(first, { epoch: 3 })).toBeUndefined();
      expect(await record.read()).toEqual({ value: { epoch: 2 }, version: second });
    });

    it("refuses a replacement of a record that does not exist", async () => {
      const record = open(fresh());
      const other = open(fresh());
      const version = await other.replace(undefined, { epoch: 1 });
      expect(await record.replace(version, { epoch: 2 })).toBeUndefined();
      expect(await record.read()).toBeUndefined();
    });

    it("lets exactly one of concurrent replacements from the same read win", async () => {
      const location = fresh();
      await open(location).replace(undefined, { epoch: 1 });
      const contenders = Array.from({ length: CONTENDERS }, () => open(location));
      const read = await contenders[0]?.read();
      expect(read).toBeDefined();
      const versions = await Promise.all(
        contenders.map((record, i) => record.replace(read?.version, { epoch: 2, owner: i })),
      );
      const winners = versions.flatMap((version, i) => (version === undefined ? [] : [{ version, owner: i }]));
      expect(winners).toHaveLength(1);
      expect(await open(location).read()).toEqual({
        value: { epoch: 2, owner: winners[0]?.owner },
        version: winners[0]?.version,
      });
    });

    it("answers concurrent calls on one instance as it answers separate writers", async () => {
      const record = open(fresh());
      const versions = await Promise.all(
        Array.from({ length: CONTENDERS }, (_, i) => record.replace(undefined, { owner: i })),
      );
      const winners = versions.filter((version) => version !== undefined);
      expect(winners).toHaveLength(1);
      expect((await record.read())?.version).toBe(winners[0]);
    });

    it("stores a nested value as it was given", async () => {
      const record = open(fresh());
      const value = {
        epoch: 7,
        owner: { id: randomUUID(), host: "pod-3", pid: 4242 },
        shards: [0, 1, { range: [64, 127] }],
        note: "quotes \" ' and \\ and ünïcode ✓",
        flags: { active: true, expired: false, missing: null },
      };
      const version = await record.replace(undefined, value);
      expect(await record.read()).toEqual({ value, version });
    });

    it("shows one instance's writes to another instance on the same location", async () => {
      const location = fresh();
      const writer = open(location);
      const reader = open(location);
      const first = await writer.replace(undefined, { epoch: 1 });
      expect(await reader.read()).toEqual({ value: { epoch: 1 }, version: first });
      const second = await reader.replace(first, { epoch: 2 });
      expect(second).toBeDefined();
      expect(await writer.read()).toEqual({ value: { epoch: 2 }, version: second });
      expect(await writer.replace(first, { epoch: 3 })).toBeUndefined();
    });
  });
}
