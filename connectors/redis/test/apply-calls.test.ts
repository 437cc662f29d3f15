// The write-ahead sink's apply calls, as built from logged records: every operation in exactly
// one call, in order, `operationsPerCall` to a call, each call's first operation index right
// after the previous call's last, only the checkpoint's last call marked last (an empty one for
// an empty checkpoint), and each call's runs counting its operations.

import { describe, expect, it } from "vitest";
import { ApplyCalls } from "../src/apply-calls.ts";
import type { LoggedOperations } from "../src/logged-operations.ts";
import type { ScriptCall } from "../src/redis-connection.ts";

/** A record with 1 to 3 operations, INCRBY and HINCRBY mixed, so calls hold several runs. */
function logged(record: number): LoggedOperations {
  const line: (string | number)[] = ["s", "0", record];
  for (let o = 0; o <= record % 3; o++) {
    if (o === 1) line.push(4, "HINCRBY", `h${record}`, "f", 1);
    else line.push(3, "INCRBY", `k${record}`, record);
  }
  return line;
}

/** The operations a call carries, read back from its runs: [command, key, ...args]. */
function operationsOf(call: ScriptCall): (string | number)[][] {
  const operations: (string | number)[][] = [];
  let at = 5;
  while (at < call.args.length) {
    const [command, argc, n] = call.args.slice(at, at + 3) as [string, number, number];
    at += 3;
    for (let i = 0; i < n; i++, at += argc) {
      operations.push([command, call.keys[operations.length + 1] as string, ...call.args.slice(at, at + argc)]);
    }
  }
  return operations;
}

describe("ApplyCalls", () => {
  for (const perCall of [1, 2, 7, 1000]) {
    for (const records of [0, 1, 5, 21]) {
      it(`${records} records, ${perCall} operations per call`, () => {
        const calls = new ApplyCalls("marker", 4, 2, "p:", perCall);
        const ready: ScriptCall[] = [];
        const expected: (string | number)[][] = [];
        for (let r = 0; r < records; r++) {
          const line = logged(r);
          calls.add(line, ready);
          for (let at = 3; at < line.length; at += 1 + (line[at] as number)) {
            const [command, key, ...args] = line.slice(at + 1, at + 1 + (line[at] as number));
            expected.push([command as string, `p:${key}`, ...args]);
          }
        }
        calls.finish(ready);
        const seen: (string | number)[][] = [];
        ready.forEach((call, i) => {
          const [checkpoint, first, last, count, epoch] = call.args as [number, number, number, number, number];
          const operations = operationsOf(call);
          expect({ checkpoint, first, last, count, epoch, marker: call.keys[0] }).toEqual({
            checkpoint: 4,
            first: seen.length,
            last: i === ready.length - 1 ? 1 : 0,
            count: operations.length,
            epoch: 2,
            marker: "marker",
          });
          expect(call.keys.length).toBe(count + 1);
          if (i < ready.length - 1) expect(count).toBe(perCall);
          seen.push(...operations);
        });
        expect(seen).toEqual(expected);
        expect(ready.length).toBe(Math.max(1, Math.ceil(expected.length / perCall)));
      });
    }
  }
});
