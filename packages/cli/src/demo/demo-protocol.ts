/** Messages from the demo worker to the demo command. */
export type WorkerMessage =
  | { readonly type: "started"; readonly restoredCheckpointId: number | undefined; readonly workers: number }
  | { readonly type: "progress"; readonly generated: number; readonly checkpoints: number; readonly maxRssKb: number }
  | { readonly type: "restarted"; readonly error: string }
  | { readonly type: "finished"; readonly checkpoints: number; readonly restarts: number }
  | { readonly type: "failed"; readonly error: string };
