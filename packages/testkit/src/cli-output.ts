// What the `exactly` command prints with --json, as a test reads it: the tests check the
// command's output as a user's script would, not the CLI's own types.

/** `exactly lingering <system> --json`: the open work found, each with what a checkpoint says of it. */
export interface LingeringJson {
  readonly description: string;
  /** Checkpoints read at --checkpoints; null when none was given. */
  readonly checkpointsRead: number | null;
  /** The shards whose checkpoints were read (empty: not sharded); null when --checkpoints was not given. */
  readonly shardsRead: readonly number[] | null;
  readonly items: readonly {
    readonly id: string;
    readonly reference: string;
    readonly detail: string;
    readonly startedAt: string | null;
    readonly ageSeconds: number | null;
    readonly status: "unreferenced" | "open-at-checkpoint" | "pre-committed";
    readonly checkpointIds: readonly number[];
    /** The same checkpoints with the shard that took each (null: the job unsharded). */
    readonly referencedBy: readonly { readonly checkpointId: number; readonly shard: number | null }[];
    readonly abortable: boolean;
    readonly aborted: boolean;
  }[];
}
