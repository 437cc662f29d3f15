/**
 * The variable that carries the demo job's configuration (JSON) to the worker. Never argv:
 * the configuration holds connection URLs and keys, and argv is readable by every local user.
 */
export const DEMO_CONFIG_VARIABLE = "EXACTLY_DEMO_CONFIG";

/** Messages from the demo worker to the demo command. */
export type WorkerMessage =
  | {
      readonly type: "started";
      /** The job's attempt in this process: above 1, the job restarted in it after a failure. */
      readonly attempt: number;
      readonly restoredCheckpointId: number | undefined;
      readonly workers: number;
    }
  | { readonly type: "progress"; readonly generated: number; readonly checkpoints: number; readonly maxRssKb: number }
  | { readonly type: "restarted"; readonly error: string }
  | { readonly type: "finished"; readonly checkpoints: number; readonly restarts: number }
  | { readonly type: "failed"; readonly error: string };
