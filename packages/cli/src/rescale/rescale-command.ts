/**
 * `exactly rescale <checkpoint location> <count>`: declares that the job run as shards there is
 * to run as `count` shards (docs/deploying.md, Rescaling). The first process started as one of
 * `count` then moves the layout, once every shard of the current one has stopped. Without the
 * declaration such a process is refused, as a process of an older layout started again must
 * be: only the operator knows which of the two it is. Declaring the current count withdraws a
 * declaration.
 */
import { declareRescale } from "@exactly/core";
import { openCheckpointStorage } from "../inspect/inspect-command.ts";
import { withS3CredentialsHint } from "../s3-connection.ts";

/** Declares the rescale; returns the line to print. */
export async function runRescaleCommand(
  location: string,
  count: number,
  options: { readonly s3Endpoint?: string } = {},
): Promise<string> {
  const storage = await openCheckpointStorage(location, options);
  try {
    const layout = await withS3CredentialsHint(declareRescale(storage, count));
    return layout.next === undefined
      ? `${location}: the job runs as ${layout.count} shards (layout generation ${layout.generation}); no rescale is declared`
      : `${location}: rescale from ${layout.count} to ${layout.next} shards declared (layout generation ${layout.generation}): ` +
          `stop the ${layout.count} shards, then start ${layout.next}; the first of them moves the layout`;
  } finally {
    (storage as { close?: () => void }).close?.();
  }
}
