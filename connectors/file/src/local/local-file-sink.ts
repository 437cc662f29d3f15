import { resolve } from "node:path";
import { ConfigurationError, DeliveryGuarantee } from "@exactly/core";
import { AtLeastOnceFileSink } from "../at-least-once-file-sink.ts";
import { FileSink } from "../file-sink.ts";
import type { FileSinkOptions } from "../rolling-parts.ts";
import { LocalRecoverableWriter } from "./local-recoverable-writer.ts";

export interface LocalFileSinkOptions<T> extends Omit<FileSinkOptions<T>, "writer"> {
  /** The base directory; every bucket is inside it. */
  readonly directory: string;
  /**
   * EXACTLY_ONCE (default): {@link FileSink}, which publishes a checkpoint's parts once it is
   * complete. AT_LEAST_ONCE: {@link AtLeastOnceFileSink}, which writes straight to visible part
   * files and only makes them durable at the barrier.
   */
  readonly guarantee?: DeliveryGuarantee;
}

/** The rolling file sink on local disk, of the class that gives the asked guarantee. */
export function localFileSink<T>(options: LocalFileSinkOptions<T>): FileSink<T> | AtLeastOnceFileSink<T> {
  const { directory, guarantee = DeliveryGuarantee.EXACTLY_ONCE, ...rest } = options;
  const sinkOptions: FileSinkOptions<T> = { ...rest, writer: new LocalRecoverableWriter(resolve(directory)) };
  switch (guarantee) {
    case DeliveryGuarantee.EXACTLY_ONCE:
      return new FileSink(sinkOptions);
    case DeliveryGuarantee.AT_LEAST_ONCE:
      return new AtLeastOnceFileSink(sinkOptions);
    default:
      throw new ConfigurationError("guarantee", "the file sink supports EXACTLY_ONCE and AT_LEAST_ONCE");
  }
}
