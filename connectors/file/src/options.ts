import type { BucketAssigner } from "./bucket-assigner.ts";
import type { RecoverableWriter } from "./recoverable-writer.ts";
import type { RollingPolicy } from "./rolling-policy.ts";

/** What every file sink is configured with, whatever its guarantee. */
export interface FileSinkOptions<T> {
  readonly writer: RecoverableWriter;
  /** Part file names start with this; unique per sink. Default: `part-<sink name>`. */
  readonly partPrefix?: string;
  /** Part file name ending, e.g. ".jsonl". Default "". */
  readonly partSuffix?: string;
  readonly bucketAssigner?: BucketAssigner<T>;
  /**
   * Turns a record into one line (without the newline). Default JSON.stringify. A result
   * that is not a string, or holds a '\n', fails the job naming the record.
   */
  readonly encoder?: (record: T) => string;
  readonly rollingPolicy?: RollingPolicy;
}
