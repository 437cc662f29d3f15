import { resolve } from "node:path";
import { ConfigurationError, DeliveryGuarantee } from "@exactly/core";
import { FileAtLeastOnceSink } from "../file-at-least-once-sink.ts";
import { FileTwoPhaseSink } from "../file-two-phase-sink.ts";
import type { FileSinkOptions } from "../options.ts";
import { LocalRecoverableWriter } from "./local-recoverable-writer.ts";

export interface LocalFileSinkOptions<T> extends Omit<FileSinkOptions<T>, "writer"> {
  /** The base directory; every bucket is inside it. */
  readonly directory: string;
  /**
   * EXACTLY_ONCE (default): {@link FileTwoPhaseSink}, which publishes a checkpoint's parts once it is
   * complete. AT_LEAST_ONCE: {@link FileAtLeastOnceSink}, which writes straight to visible part
   * files and only makes them durable at the barrier.
   */
  readonly guarantee?: DeliveryGuarantee;
}

/** The rolling file sink on local disk, of the class that gives the asked guarantee. */
export function localFileSink<T>(options: LocalFileSinkOptions<T>): FileTwoPhaseSink<T> | FileAtLeastOnceSink<T> {
  const { directory, guarantee = DeliveryGuarantee.EXACTLY_ONCE, ...rest } = options;
  const sinkOptions: FileSinkOptions<T> = { ...rest, writer: new LocalRecoverableWriter(resolve(directory)) };
  switch (guarantee) {
    case DeliveryGuarantee.EXACTLY_ONCE:
      return new FileTwoPhaseSink(sinkOptions);
    case DeliveryGuarantee.AT_LEAST_ONCE:
      return new FileAtLeastOnceSink(sinkOptions);
    default:
      throw new ConfigurationError("guarantee", "the file sink supports EXACTLY_ONCE and AT_LEAST_ONCE");
  }
}
