/**
 * The demo pipeline (generator → keyed stage → exactly-once file sink, parallelism 2) at a
 * steady rate for a given time, in its own process: every second it samples its RSS, and it
 * keeps every checkpoint's duration with the time it completed. Prints one BENCH_SOAK line
 * of JSON at the end.
 *   node test/bench/soak-job.ts <seconds> <records/s> <dir>
 */
import { performance } from "node:perf_hooks";
import { DeliveryGuarantee, silentLogger } from "@exactly/core";
import { loadDemoJob } from "../../packages/cli/src/demo/demo-job.ts";
import { SOAK_PREFIX, type SoakSamples } from "./bench-protocol.ts";

const [secondsArg, rateArg, dir] = process.argv.slice(2) as [string, string, string];
const seconds = Number(secondsArg);
const rate = Number(rateArg);
const config = {
  records: seconds * rate,
  out: dir,
  parallelism: 2,
  guarantee: DeliveryGuarantee.EXACTLY_ONCE,
  checkpointIntervalMs: 1000,
  keys: 1024,
  ratePerSecond: rate,
};
const rss: Array<{ t: number; mb: number }> = [];
const checkpoints: Array<{ t: number; ms: number }> = [];
const started = performance.now();
const now = () => (performance.now() - started) / 1000;
const sampler = setInterval(() => rss.push({ t: now(), mb: process.memoryUsage().rss / 2 ** 20 }), 1000);
const job = await loadDemoJob(config, { logger: silentLogger });
const client = job.start({ onComplete: (_, info) => checkpoints.push({ t: now(), ms: info.durationMs }) });
await client.result;
clearInterval(sampler);
const samples: SoakSamples = { rss, checkpoints, records: config.records, seconds: now() };
process.stdout.write(`${SOAK_PREFIX}${JSON.stringify(samples)}\n`);
