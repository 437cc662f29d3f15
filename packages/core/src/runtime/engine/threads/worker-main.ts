/**
 * A worker thread of a job (threaded-execution.ts starts it): imports the job module, builds
 * the same graph, runs subtask i of every stage where i mod W is this worker, and answers the
 * main thread. Its tasks write their state through this thread's own storage instance and
 * report only the handle; the coordinator in the main thread decides what is complete.
 * Clients are made here, inside the subtasks that use them: nothing is shared across threads.
 */

import { parentPort, workerData } from "node:worker_threads";
import type { StoredTaskState } from "../../../checkpoint/checkpoint-storage.ts";
import { CancelledError, ConfigurationError } from "../../../errors.ts";
import { classifyFailure } from "../../../failures.ts";
import type { Logger } from "../../../logger.ts";
import { type JobMetrics, noMetrics } from "../../../metrics.ts";
import { ShardCheckpointStorage } from "../../../shards/shard-checkpoint-storage.ts";
import type { Edge } from "../../api/job-graph.ts";
import { loadJob } from "../../api/job-module.ts";
import { jsonExchangeCodec } from "../exchange/exchange-codec.ts";
import { ThreadChannelReceiver, ThreadChannelSender } from "../exchange/thread-channel.ts";
import { settle } from "../execution.ts";
import { type ClaimResult, setClaimTransport } from "../process-claims.ts";
import { TaskGroup, type TaskShare } from "../task-group.ts";
import { channelName, edgesOf, jobShape, workerOf } from "./placement.ts";
import { type FromWorker, type MetricsCall, type ToWorker, toWireError, type WorkerSetup } from "./worker-protocol.ts";

const setup = workerData as WorkerSetup;
const main = parentPort as NonNullable<typeof parentPort>;
const post = (message: FromWorker) => main.postMessage(message);

/**
 * A channel between threads holds this many times a local channel's batches: a credit's way
 * back to the sender takes a message, not a microtask, and with the local capacity the
 * sender waited on it often (demo job, P=2 on 2 workers: 2.33–2.38 M records/s at 4 batches,
 * 2.52 M at 16). Still a fixed bound, so memory stays bounded (I6).
 */
const THREAD_CHANNEL_FACTOR = 4;

/** How often counts and metrics go to the main thread (they are figures, not decisions). */
const REPORT_INTERVAL_MS = 100;

const logger: Logger = {
  info: (message, fields) => post({ type: "log", level: "info", message, ...(fields ? { fields } : {}) }),
  warn: (message, fields) => post({ type: "log", level: "warn", message, ...(fields ? { fields } : {}) }),
  error: (message, fields) => post({ type: "log", level: "error", message, ...(fields ? { fields } : {}) }),
};

// Calls come per batch; they are collected and sent with the next report, not one message each.
let calls: MetricsCall[] = [];
const metrics: JobMetrics = setup.metrics
  ? {
      recordsIn: (task, count) => calls.push(["recordsIn", task, count]),
      recordsOut: (task, count) => calls.push(["recordsOut", task, count]),
      backpressure: (task, seconds) => calls.push(["backpressure", task, seconds]),
      committed: (task, seconds) => calls.push(["committed", task, seconds]),
      pendingTransactions: (task, count, oldest) => calls.push(["pendingTransactions", task, count, oldest]),
      checkpointEnded: (result, info) => calls.push(["checkpointEnded", result, info]),
      restarted: () => {},
    }
  : noMetrics;

// Claims on process-wide names (a Kafka prefix) are the main thread's to answer.
const claims = new Map<number, (result: ClaimResult) => void>();
let nextClaim = 0;
setClaimTransport({
  claim: (namespace, name, holder) =>
    new Promise((resolve) => {
      const request = ++nextClaim;
      claims.set(request, resolve);
      post({ type: "claim", request, namespace, name, holder });
    }),
  release: (namespace, name, part) => post({ type: "release", namespace, name, part }),
});

let group: TaskGroup | undefined;
let classify: (error: unknown) => ReturnType<typeof classifyFailure> = () => "other";
let runs: Promise<void>[] = [];
let stopRequested = false;
let cancelling: Promise<void> | undefined;

function report(): void {
  const sent = calls;
  calls = [];
  post({ type: "report", read: group?.recordsRead ?? 0, written: group?.recordsWritten ?? 0, metrics: sent });
}
const reporter = setInterval(report, REPORT_INTERVAL_MS);
reporter.unref();

/** Ends this worker's part of the attempt: tasks released, settled, sinks closed; then it says so. */
function cancel(reason: unknown): Promise<void> {
  cancelling ??= (async () => {
    group?.cancel(reason);
    await settle([...runs, ...(group?.openCalls() ?? [])], logger);
    await group?.close().catch(() => {});
    clearInterval(reporter);
    report();
    post({ type: "settled" });
  })();
  return cancelling;
}

function fail(error: unknown): void {
  if (cancelling) return;
  post({ type: "failed", error: toWireError(error, classify(error)) });
  void cancel(error);
}

function share(edges: readonly Edge[], capacity: number): TaskShare {
  const indexOf = new Map(edges.map((edge, index) => [edge, index]));
  const port = (ports: WorkerSetup["senders"], edge: Edge, from: number, to: number) => {
    const name = channelName(indexOf.get(edge) as number, from, to);
    const found = ports[name];
    if (!found) throw new Error(`worker ${setup.worker} has no port for channel ${name}`);
    return found;
  };
  return {
    runs: (_stage, subtask) => workerOf(subtask, setup.workers) === setup.worker,
    senderTo: (edge, from, to) =>
      new ThreadChannelSender(port(setup.senders, edge, from, to), edge.codec ?? jsonExchangeCodec, capacity),
    receiverFrom: (edge, from, to) =>
      new ThreadChannelReceiver(port(setup.receivers, edge, from, to), edge.codec ?? jsonExchangeCodec, capacity)
        .channel,
  };
}

async function start(): Promise<void> {
  const job = await loadJob(setup.origin.url, {
    export: setup.origin.export,
    params: setup.origin.params,
    ...(setup.origin.shard ? { shard: setup.origin.shard } : {}),
    ...(setup.origin.lease ? { lease: setup.origin.lease } : {}),
    ...(setup.origin.group !== undefined ? { group: setup.origin.group } : {}),
    runtime: { logger, metrics },
  });
  const { graph, base, restart, storage } = job.executionSetup();
  if (setup.ownership && storage instanceof ShardCheckpointStorage) storage.enter(setup.ownership.epoch);
  if (jobShape(graph, job.options.checkpoint.storage) !== setup.shape) {
    throw new ConfigurationError(
      "workers",
      `${setup.origin.url} built a different job in worker ${setup.worker} than in the main thread: ` +
        "a job module must build the same stages every time it is called (no clocks, random numbers or per-thread state in its shape)",
    );
  }
  group = new TaskGroup({
    graph,
    options: { ...base, listener: {}, ...(setup.ownership ? { ownership: setup.ownership } : {}) },
    restored: setup.restored,
    share: share(edgesOf(graph), base.channelCapacity * THREAD_CHANNEL_FACTOR),
    acks: {
      acknowledge: (checkpointId: number, taskKey: string, stored: StoredTaskState) =>
        post({ type: "ack", checkpointId, taskKey, stored }),
      declineState: (checkpointId: number, taskKey: string, error: unknown) =>
        post({ type: "decline", checkpointId, taskKey, error: toWireError(error, "other") }),
    },
    onSourcesFinishing: () => post({ type: "sourcesFinishing" }),
  });
  const own = group;
  // Cancelled while loading: this attempt is over, and its sinks must not recover beside the next.
  if (cancelling) return;
  const hints = [...own.transientClassifiers(), ...(storage.isTransient ? [storage.isTransient.bind(storage)] : [])];
  classify = (error) => classifyFailure(error, hints, restart.classify);
  if (stopRequested) own.requestStop();
  await own.open();
  post({ type: "opened" });
}

async function onMessage(message: ToWorker): Promise<void> {
  const own = group;
  switch (message.type) {
    case "run":
      if (!own || cancelling) return;
      runs = own.runTasks(fail);
      await Promise.all(runs);
      if (!cancelling) {
        report();
        post({ type: "tasksDone" });
      }
      return;
    case "trigger":
      own?.triggerBarriers(message.checkpointId);
      return;
    case "notify":
      if (!own) return;
      if (message.what === "complete") await own.notifyComplete(message.checkpointId);
      else await own.notifyAborted(message.checkpointId);
      post({ type: "notified", request: message.request });
      return;
    case "stop":
      stopRequested = true;
      own?.requestStop();
      return;
    case "finish":
      own?.finishSources();
      return;
    case "close":
      await own?.close();
      clearInterval(reporter);
      report();
      post({ type: "closed" });
      return;
    case "claimed":
      claims.get(message.request)?.(message.result);
      claims.delete(message.request);
      return;
    case "cancel":
      await cancel(new CancelledError(`the attempt failed: ${message.reason.message}`));
      return;
  }
}

main.on("message", (message: ToWorker) => {
  onMessage(message).catch(fail);
});
start().catch(fail);
