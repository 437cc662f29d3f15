/**
 * How long a shard goes without commits when its process dies (docs/design.md §2, Shards):
 * the demo job as shard 0 of 1, paced, SIGKILLed once it commits, and a new process started at
 * once for the same shard, as a StatefulSet would; from the kill to the successor's first
 * commit, over 20 kills. The successor waits out the lease (2 s here), restores and commits
 * its first checkpoint. Not a test: `pnpm bench:takeover [--kills K]`.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { COMMITTED_LINE } from "./bench-protocol.ts";

const { values } = parseArgs({ options: { kills: { type: "string", default: "20" } } });
const kills = Number(values.kills);
const script = fileURLToPath(new URL("./cases/demo-cases.ts", import.meta.url));
const dir = await mkdtemp(join(tmpdir(), "exactly-bench-takeover-"));
const LEASE_MS = 2_000;

/** The shard's process; resolves `committed` at its first commit. */
function startShard(): { child: ChildProcess; committed: Promise<number> } {
  const child = spawn(process.execPath, [...process.execArgv, script, "1 shard, P=1", String(1e9), dir], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, BENCH_SIGNAL_COMMITS: "1", BENCH_RATE: "20000", BENCH_INTERVAL_MS: "500" },
  });
  const committed = new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout?.on("data", (chunk) => {
      out += chunk;
      if (out.includes(COMMITTED_LINE)) resolve(performance.now());
    });
    child.on("exit", (code, signal) =>
      reject(new Error(`the shard ended (code ${code}, signal ${signal}) before it committed`)),
    );
  });
  committed.catch(() => {});
  return { child, committed };
}

let owner = startShard();
await owner.committed;
const takeovers: number[] = [];
for (let i = 0; i < kills; i++) {
  // Let the owner commit a few more checkpoints, so that it dies with work in flight.
  await new Promise((resolve) => setTimeout(resolve, 1_500));
  const killedAt = performance.now();
  owner.child.kill("SIGKILL");
  owner = startShard();
  takeovers.push((await owner.committed) - killedAt);
}
owner.child.kill("SIGKILL");
const sorted = [...takeovers].sort((a, b) => a - b);
const median = sorted[Math.floor(sorted.length / 2)] as number;
const max = sorted.at(-1) as number;
console.log(
  `takeover (SIGKILL of a shard → its successor's first commit), ${kills} kills, lease ${LEASE_MS} ms, checkpoints every 500 ms:`,
);
console.log(
  `  median ${(median / 1000).toFixed(2)} s, max ${(max / 1000).toFixed(2)} s (target: lease + 2 s = ${(LEASE_MS + 2000) / 1000} s)`,
);
console.log(`  each: ${takeovers.map((t) => (t / 1000).toFixed(2)).join(", ")}`);
