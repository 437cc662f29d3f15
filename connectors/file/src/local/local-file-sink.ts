import { resolve } from "node:path";
import { FileSink, type FileSinkOptions } from "../file-sink.ts";
import { LocalRecoverableWriter } from "./local-recoverable-writer.ts";

export interface LocalFileSinkOptions<T> extends Omit<FileSinkOptions<T>, "writer"> {
  /** The base directory; every bucket is inside it. */
  readonly directory: string;
}

/** The rolling file sink on local disk. */
export function localFileSink<T>(options: LocalFileSinkOptions<T>): FileSink<T> {
  return new FileSink<T>({ ...options, writer: new LocalRecoverableWriter(resolve(options.directory)) });
}
