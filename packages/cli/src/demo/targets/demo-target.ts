/**
 * Where the demo job writes: one target per value of `--sink`. A target owns everything
 * that differs between sinks, one method per step of a run, in the order the demo calls them:
 *
 *   settings  flags → settings (checked; a bad flag is a ConfigurationError naming it)
 *   identity  what a resumed run must share with the run in --out it resumes
 *   prepare   a fresh output (never on a resumed run)
 *   sinks     the job's sinks (in the worker process, from the settings as JSON)
 *   verify    reads back what was committed and counts it
 *   rows      its lines of the printed summary
 *
 * and, for a target that writes the records into --out, `outBytesPerRecord`, which the disk
 * check before the run multiplies by --records.
 *
 * Settings cross to the worker process as JSON, so they hold plain data only.
 */
import type { CheckpointStorage, DeliveryGuarantee, SinkFactory } from "@exactly/core";
import type { ServerSetting } from "../../server-check.ts";
import type { DemoOptions, DemoSinkName, DemoSummary } from "../demo-options.ts";
import type { DemoIdentity } from "../demo-out.ts";
import type { DemoRecord } from "../demo-record.ts";
import type { OutputCheck } from "../verify-output.ts";

/** A flag only one target takes, as commander declares it: `--pg-url <url>`. */
export interface DemoFlag {
  readonly flags: string;
  readonly description: string;
}

/** What the job knows that a target's sinks and check need. */
export interface DemoRun {
  readonly records: number;
  readonly keys: number;
  readonly guarantee: DeliveryGuarantee;
  /** The output directory: the files of `--sink file`, and the checkpoints unless a target keeps them. */
  readonly out: string;
}

/** The summary fields a target adds to the common ones. */
export type DemoTargetFields = Partial<
  Pick<
    DemoSummary,
    | "table"
    | "pgSink"
    | "preparedLeft"
    | "keyPrefix"
    | "keysWithWrongCount"
    | "bucket"
    | "prefix"
    | "checkpointLocation"
    | "uploadsLeft"
  >
>;

export interface DemoTargetCheck {
  /** What a reader of the target sees, against what the generator produced. */
  readonly check: OutputCheck;
  /** Work the sink left open after the run (prepared transactions, multipart uploads): any fails the verdict. */
  readonly leftOpen: number;
  readonly fields: DemoTargetFields;
}

export interface DemoTarget<S extends object> {
  readonly sink: DemoSinkName;
  /** The flags only this target takes: with another `--sink` the command refuses them. */
  readonly flags: readonly DemoFlag[];
  /** `previous`: the identity of the run in --out this one resumes, if any. */
  settings(options: DemoOptions, previous: DemoIdentity | undefined): S;
  identity(settings: S): Partial<DemoIdentity>;
  /** The server the target writes to, checked before anything is prepared; none for files. */
  server?(settings: S): ServerSetting | undefined;
  prepare(settings: S): Promise<void>;
  sinks(settings: S, run: DemoRun): Promise<Record<string, SinkFactory<DemoRecord>>>;
  /** Where the job keeps its checkpoints when not in --out; undefined for --out. */
  checkpoints?(settings: S): Promise<CheckpointStorage | undefined>;
  verify(settings: S, run: DemoRun): Promise<DemoTargetCheck>;
  /** Bytes a record takes in --out at most, for a target that writes the records there; a server's disk is not this machine's. */
  outBytesPerRecord?(run: { readonly records: number; readonly keys: number }): number;
  rows(summary: DemoSummary): Array<[string, string]>;
}
