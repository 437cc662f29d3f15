/**
 * What the main thread and a worker thread say to each other while a job runs on workers.
 * The main thread decides (checkpoints, completion, the end); workers do and report.
 */

import type { MessagePort } from "node:worker_threads";
import type { RestoredCheckpoint, StoredTaskState } from "../../../checkpoint/checkpoint-storage.ts";
import { ConfigurationError, ExactlyError } from "../../../errors.ts";
import type { FailureKind } from "../../../failures.ts";
import type { CheckpointResult, TaskLabels } from "../../../metrics.ts";
import type { ShardOwnership } from "../../../shards/shard-owner.ts";
import type { JobOrigin } from "../../api/job-origin.ts";
import type { ClaimHolder, ClaimResult } from "../process-claims.ts";

/** A worker's start: which job, which share of it, and its ends of the thread channels. */
export interface WorkerSetup {
  readonly origin: JobOrigin;
  readonly worker: number;
  readonly workers: number;
  /** The main thread's job shape (placement.ts : jobShape); the worker's must equal it. */
  readonly shape: string;
  readonly restored: RestoredCheckpoint | undefined;
  /** Channel name → the port this worker sends on. */
  readonly senders: Record<string, MessagePort>;
  /** Channel name → the port this worker receives on. */
  readonly receivers: Record<string, MessagePort>;
  /** Whether the main thread keeps metrics (otherwise the worker reports none). */
  readonly metrics: boolean;
  /** The shard and epoch the attempt owns, in a sharded job: the worker writes its state into that epoch's folder. */
  readonly ownership: ShardOwnership | undefined;
}

/** Main thread → worker. */
export type ToWorker =
  | { readonly type: "run" }
  | { readonly type: "trigger"; readonly checkpointId: number }
  | {
      readonly type: "notify";
      readonly request: number;
      readonly what: "complete" | "aborted";
      readonly checkpointId: number;
    }
  | { readonly type: "stop" }
  | { readonly type: "finish" }
  | { readonly type: "close" }
  | { readonly type: "cancel"; readonly reason: WireError }
  | { readonly type: "claimed"; readonly request: number; readonly result: ClaimResult };

/** One call a worker's tasks made on the job's metrics, replayed in the main thread. */
export type MetricsCall =
  | readonly ["recordsIn" | "recordsOut" | "backpressure" | "committed", TaskLabels, number]
  | readonly ["pendingTransactions", TaskLabels, number, number | undefined]
  | readonly ["checkpointEnded", CheckpointResult, { durationSeconds: number; sizeBytes?: number }];

/** Worker → main thread. */
export type FromWorker =
  | { readonly type: "opened" }
  | { readonly type: "ack"; readonly checkpointId: number; readonly taskKey: string; readonly stored: StoredTaskState }
  | { readonly type: "decline"; readonly checkpointId: number; readonly taskKey: string; readonly error: WireError }
  | { readonly type: "sourcesFinishing" }
  | { readonly type: "notified"; readonly request: number }
  | { readonly type: "tasksDone" }
  | { readonly type: "closed" }
  | { readonly type: "failed"; readonly error: WireError }
  | { readonly type: "settled" }
  | {
      readonly type: "log";
      readonly level: "info" | "warn" | "error";
      readonly message: string;
      readonly fields?: Record<string, unknown>;
    }
  | { readonly type: "report"; readonly read: number; readonly written: number; readonly metrics: MetricsCall[] }
  | {
      readonly type: "claim";
      readonly request: number;
      readonly namespace: string;
      readonly name: string;
      readonly holder: ClaimHolder;
    }
  | { readonly type: "release"; readonly namespace: string; readonly name: string; readonly part: number };

/** An error as it crosses: what the restart strategy and the user need of it, classified where it happened. */
export interface WireError {
  readonly name: string;
  readonly message: string;
  readonly stack: string | undefined;
  readonly code: ExactlyError["code"] | undefined;
  readonly setting: string | undefined;
  readonly kind: FailureKind;
}

export function toWireError(error: unknown, kind: FailureKind): WireError {
  const e = error instanceof Error ? error : new Error(String(error));
  return {
    name: e.name,
    message: e.message,
    stack: e.stack,
    code: error instanceof ExactlyError ? error.code : undefined,
    setting: error instanceof ConfigurationError ? error.setting : undefined,
    kind,
  };
}

/**
 * A failure in a worker thread, as the main thread sees it: the worker's error by name,
 * message, code and stack, and how the worker's restart strategy classified it there (where
 * its sinks' and readers' own classifiers are).
 */
export class WorkerFailure extends ExactlyError {
  readonly kind: FailureKind;
  override readonly permanent: boolean;
  readonly worker: number;

  constructor(worker: number, wire: WireError) {
    super(wire.code ?? "WORKER_FAILED", wire.message);
    this.name = wire.name;
    if (wire.stack) this.stack = wire.stack;
    this.kind = wire.kind;
    this.permanent = wire.kind === "permanent";
    this.worker = worker;
  }
}

/** The error a worker's failure becomes in the main thread; a configuration error stays one (it is never retried). */
export function fromWireError(worker: number, wire: WireError): Error {
  if (wire.code === "CONFIGURATION" && wire.setting !== undefined) {
    const prefix = `${wire.setting}: `;
    const message = wire.message.startsWith(prefix) ? wire.message.slice(prefix.length) : wire.message;
    const error = new ConfigurationError(wire.setting, message);
    if (wire.stack) error.stack = wire.stack;
    return error;
  }
  return new WorkerFailure(worker, wire);
}
