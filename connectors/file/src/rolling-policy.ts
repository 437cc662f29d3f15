import { requirePositiveInteger } from "@exactly/core/internal";

/**
 * When a part file is closed. Every checkpoint closes all open parts (they are what the
 * checkpoint pre-commits); a part can also roll earlier once it reaches a size.
 */
export interface RollingPolicy {
  /** Roll a part once it holds at least this many bytes. Default 128 MiB. */
  readonly maxPartBytes?: number;
}

export function resolveRollingPolicy(policy: RollingPolicy = {}): Required<RollingPolicy> {
  const maxPartBytes = policy.maxPartBytes ?? 128 * 1024 * 1024;
  return { maxPartBytes: requirePositiveInteger("rollingPolicy.maxPartBytes", maxPartBytes) };
}
