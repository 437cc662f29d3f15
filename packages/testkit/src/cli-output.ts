// What the `exactly` command prints with --json, as a test reads it: the tests check the
// command's output as a user's script would, not the CLI's own types.

/** `exactly lingering <system> --json`: the open work found, each with what a checkpoint says of it. */
export interface LingeringJson {
  readonly description: string;
  /** Checkpoints read at --checkpoints; null when none was given. */
  readonly checkpointsRead: number | null;
  readonly items: readonly {
    readonly id: string;
    readonly reference: string;
    readonly detail: string;
    readonly startedAt: string | null;
    readonly ageSeconds: number | null;
    readonly status: "unreferenced" | "open-at-checkpoint" | "pre-committed";
    readonly checkpointIds: readonly number[];
    readonly abortable: boolean;
    readonly aborted: boolean;
  }[];
}
