/**
 * The transactional id prefixes the exactly-once sinks of this process hold. Two sinks on one
 * prefix would abort each other's transactions as lingering (I7, docs/design.md §3), so a
 * second sink claiming a prefix another sink holds is refused; the subtasks of one sink share
 * theirs. The claims are core's process-wide ones, so the check holds across worker threads.
 */
import { ConfigurationError } from "@exactly/core";
import { claimInProcess, releaseInProcess } from "@exactly/core/internal";

const NAMESPACE = "@exactly/kafka:transactionalIdPrefix";

/** Takes `prefix` for subtask `subtask` of sink `sinkId`, or refuses it if another sink (or this subtask) holds it. */
export async function claimPrefix(prefix: string, sinkId: string, subtask: number): Promise<void> {
  const result = await claimInProcess(NAMESPACE, prefix, { owner: sinkId, part: subtask });
  if (!result.granted) {
    throw new ConfigurationError(
      "transactionalIdPrefix",
      `"${prefix}" is already used by sink ${result.heldBy} in this process; every Kafka sink needs its own prefix`,
    );
  }
}

/** Gives the prefix back once the subtask closed: a restart in the same process claims it again. */
export function releasePrefix(prefix: string, subtask: number): void {
  releaseInProcess(NAMESPACE, prefix, subtask);
}
