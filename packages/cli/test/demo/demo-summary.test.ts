// The demos' verdict says what the run showed, no more: a run that ended before every kill
// asked for landed showed exactly once under fewer kills, and says so instead of a plain OK.

import { formatSummary } from "@exactly/cli";
import { describe, expect, it } from "vitest";
import type { DemoSummary } from "../../src/demo/demo-options.ts";
import { formatKafkaSummary, type KafkaDemoSummary } from "../../src/demo/targets/kafka-target.ts";

const demoRun: DemoSummary = {
  committed: 1000,
  lost: 0,
  duplicated: 0,
  phantom: 0,
  keysWithBadSequence: 0,
  files: 4,
  records: 1000,
  guarantee: "exactly-once",
  checkpointing: "exactly-once",
  seed: 7,
  kills: 3,
  killsAsked: 3,
  recoveries: 3,
  restoredFromCheckpoint: 2,
  checkpoints: 9,
  resumed: false,
  resumedFromCheckpoint: null,
  elapsedSeconds: 2,
  recordsPerSecond: 500,
  peakRssMb: 90,
  ratePerSecond: 100,
  parallelism: 2,
  workers: 2,
  out: "/tmp/exactly-demo-test",
  outRemoved: true,
  sink: "file",
  ok: true,
};

const kafkaRun: KafkaDemoSummary = {
  events: 1000,
  windows: 50,
  kills: 3,
  killsAsked: 3,
  elapsedSeconds: 5,
  input: "in",
  output: "out",
  mismatches: [],
  kcatMismatches: [],
  kcatStatus: "checked",
  brokers: ["localhost:9092"],
  seed: 7,
  ok: true,
};

function verdictOf(printed: string): string {
  return printed.split("\n").at(-1) as string;
}

describe("the demo's verdict", () => {
  it("is a plain OK when every kill asked for landed", () => {
    expect(verdictOf(formatSummary(demoRun))).toBe("OK: every record committed exactly once");
    expect(verdictOf(formatKafkaSummary(kafkaRun))).toBe("OK: every window committed exactly once");
  });

  it("says how many of the kills asked for landed when fewer did", () => {
    const printed = formatSummary({ ...demoRun, kills: 1, recoveries: 1, restoredFromCheckpoint: 1 });
    expect(verdictOf(printed)).toBe("OK: every record committed exactly once, but under 1 of the 3 kills asked");
    expect(printed).toMatch(/^kills \(SIGKILL\) +1 of the 3 asked: the run ended before the others \(seed 7\)$/m);
    const kafka = formatKafkaSummary({ ...kafkaRun, kills: 0 });
    expect(verdictOf(kafka)).toBe("OK: every window committed exactly once, but under 0 of the 3 kills asked");
  });

  it("is NOT EXACTLY ONCE when the check failed, whatever the kills", () => {
    expect(verdictOf(formatSummary({ ...demoRun, kills: 1, lost: 3, ok: false }))).toBe("NOT EXACTLY ONCE");
  });

  it("counts recoveries from a checkpoint among the recoveries", () => {
    expect(formatSummary(demoRun)).toMatch(/^recoveries +3 \(2 from a checkpoint, 1 from the beginning\)$/m);
  });
});
