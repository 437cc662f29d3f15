// The one way the fault tests run a job through a fault: a generator (ids 0…records−1 in
// four splits) into the sink under test at parallelism 2, checkpoints every 100 ms on local
// disk unless the test gives a storage, and the default restart strategy's classification
// (an outage is ridden through however long it lasts) with short delays. The fault comes
// `faultAfterMs` into the run; what the sink had written by then is read first, so a test
// can show the fault fell in the middle. Each test then checks the result exactly.

import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type CheckpointStorage,
  consoleLogger,
  GeneratorSource,
  type RestartStrategy,
  type SinkFactory,
  StreamJob,
  silentLogger,
} from "@exactly/core";

export interface FaultRun<T, B> {
  /** The job's name, and the temporary checkpoint directory's. */
  readonly name: string;
  readonly sink: SinkFactory<T>;
  readonly records: number;
  readonly generate: (id: number) => T;
  readonly ratePerSecond: number;
  readonly batchSize?: number;
  readonly checkpointIntervalMs?: number;
  /** Default: a temporary directory. */
  readonly checkpointStorage?: CheckpointStorage;
  /** Default: the default classification, delays from 100 ms to 1 s. */
  readonly restart?: RestartStrategy;
  readonly faultAfterMs: number;
  /** What the sink had written when the fault came. */
  readonly before?: () => Promise<B>;
  readonly fault: () => Promise<unknown>;
}

export interface FaultRunResult<B> {
  readonly restarts: number;
  /** Attempts started: the first one, and one per restart. */
  readonly attempts: number;
  readonly before: B | undefined;
  /** The job had ended when the fault began: the fault tested nothing. */
  readonly endedBeforeFault: boolean;
}

export async function runThroughFault<T, B = undefined>(run: FaultRun<T, B>): Promise<FaultRunResult<B>> {
  const job = new StreamJob({
    name: run.name,
    parallelism: 2,
    checkpoint: {
      storage: run.checkpointStorage ?? (await mkdtemp(join(tmpdir(), `exactly-${run.name}-`))),
      intervalMs: run.checkpointIntervalMs ?? 100,
    },
    restart: run.restart ?? { initialDelayMs: 100, maxDelayMs: 1000 },
    // EXACTLY_TEST_VERBOSE=1 shows the job's restarts and recoveries while a fault test runs.
    logger: process.env.EXACTLY_TEST_VERBOSE ? consoleLogger : silentLogger,
    batchSize: run.batchSize ?? 200,
  });
  job
    .fromSource(
      new GeneratorSource({ count: run.records, splits: 4, ratePerSecond: run.ratePerSecond, generate: run.generate }),
    )
    .sinkTo(run.sink, { name: "out" });
  let ended = false;
  let attempts = 0;
  const running = job.execute({ onStart: () => attempts++ }).finally(() => {
    ended = true;
  });
  await new Promise((r) => setTimeout(r, run.faultAfterMs));
  const before = await run.before?.();
  // Taken as the fault starts: a job may well finish while the fault's helper still waits
  // for the server to be ready again (it rode through), and that is not a fault that missed.
  const endedBeforeFault = ended;
  await run.fault();
  const { restarts } = await running;
  return { restarts, attempts, before, endedBeforeFault };
}
