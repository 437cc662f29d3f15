/**
 * The transactional id prefixes the exactly-once sinks of this process hold. Two sinks on one
 * prefix would abort each other's transactions as lingering (I7, docs/design.md §3), so a second sink claiming a
 * prefix another sink holds is refused; the subtasks of one sink share theirs.
 */
import { ConfigurationError } from "@exactly/core";

interface PrefixOwner {
  readonly sinkId: string;
  readonly subtasks: Set<number>;
}

/** On globalThis, so two copies of this module (sources and build) still share it. */
const REGISTRY_KEY = Symbol.for("@exactly/kafka:transactionalIdPrefixes");

function prefixRegistry(): Map<string, PrefixOwner> {
  const holder = globalThis as unknown as Record<symbol, Map<string, PrefixOwner> | undefined>;
  let registry = holder[REGISTRY_KEY];
  if (!registry) {
    registry = new Map();
    holder[REGISTRY_KEY] = registry;
  }
  return registry;
}

/** Takes `prefix` for subtask `subtask` of sink `sinkId`, or refuses it if another sink (or this subtask) holds it. */
export function claimPrefix(prefix: string, sinkId: string, subtask: number): void {
  const registry = prefixRegistry();
  const owner = registry.get(prefix);
  if (owner && (owner.sinkId !== sinkId || owner.subtasks.has(subtask))) {
    throw new ConfigurationError(
      "transactionalIdPrefix",
      `"${prefix}" is already used by sink ${owner.sinkId} in this process; every Kafka sink needs its own prefix`,
    );
  }
  if (owner) owner.subtasks.add(subtask);
  else registry.set(prefix, { sinkId, subtasks: new Set([subtask]) });
}

/** Gives the prefix back once the subtask closed: a restart in the same process claims it again. */
export function releasePrefix(prefix: string, subtask: number): void {
  const registry = prefixRegistry();
  const owner = registry.get(prefix);
  if (!owner) return;
  owner.subtasks.delete(subtask);
  if (owner.subtasks.size === 0) registry.delete(prefix);
}
