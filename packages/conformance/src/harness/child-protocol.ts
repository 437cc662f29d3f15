import type { ScenarioScope, SinkLifecycle } from "../definition.ts";

/** What the test process tells the child job, through the CONFORMANCE_CONFIG variable. */
export interface ChildConfig {
  readonly sinkModule: string;
  readonly sinkExport: string;
  readonly sinkOptions: unknown;
  readonly scope: ScenarioScope;
  readonly records: number;
  readonly parallelism: number;
  readonly ratePerSecond: number;
  readonly checkpointIntervalMs: number;
  readonly checkpointTimeoutMs: number;
  /** How completion notifications reach the sink: as the runtime sends them, twice, or with late repeats. */
  readonly notifications: "normal" | "duplicate" | "late";
  /** Make the sink's snapshot of this checkpoint outlast the checkpoint timeout, so it is declined. */
  readonly declineCheckpoint?: number;
  /** Hold every completion notification this long before the sink sees it (commits wait). */
  readonly holdCommitsMs?: number;
}

/** The checkpoint directory of a scope, where the test process reads completed positions. */
export const CHECKPOINTS = ".conformance-checkpoints";

/** The one line the child prints on stdout when it ends by itself. */
export interface ChildOutcome {
  readonly ok: boolean;
  readonly checkpoints: number;
  readonly declined: number;
  readonly errorCode?: string;
  readonly error?: string;
}

export const OUTCOME_PREFIX = "CONFORMANCE_OUTCOME ";

/** What the test process tells the probe, through the CONFORMANCE_PROBE variable. */
export type ProbeConfig = Pick<ChildConfig, "sinkModule" | "sinkExport" | "sinkOptions" | "scope">;

/**
 * The one line the probe prints: what the sink instance the factory built declares. Read
 * from the instance as the runtime sees it, unchecked: the test process judges it.
 */
export interface ProbedSink {
  /** The sink's class name, for messages. */
  readonly className: string;
  readonly guarantee: unknown;
  readonly capabilities: unknown;
  /** The lifecycle of the base class the sink extends; null when it extends none of them. */
  readonly baseClass: { readonly name: string; readonly lifecycle: SinkLifecycle } | null;
}

/** The one line the probe prints: the sink's declarations, or why no sink could be built. */
export type ProbeOutcome =
  | { readonly ok: true; readonly sink: ProbedSink }
  | { readonly ok: false; readonly error: string };

export const PROBE_PREFIX = "CONFORMANCE_SINK ";
export const SINK_NAME = "conformance-sink";
export const SOURCE_ID = "source:conformance";
/** The generator's lanes: id i is in lane i mod LANES. */
export const LANES = 4;
