/** What a sink promises about each input record's effect on the external system. @public */
export const DeliveryGuarantee = {
  EXACTLY_ONCE: "EXACTLY_ONCE",
  AT_LEAST_ONCE: "AT_LEAST_ONCE",
  NONE: "NONE",
} as const;
export type DeliveryGuarantee = (typeof DeliveryGuarantee)[keyof typeof DeliveryGuarantee];

/**
 * What a sink supports. Every flag defaults to the safe answer (false); the runtime and the
 * conformance suite read these declarations instead of guessing.
 * @public
 */
export interface SinkCapabilities {
  /** Restored state may be spread over a different number of subtasks. */
  readonly rescale?: boolean;
  /** Writes are keyed upserts (the end state, not the log of writes, is the output). */
  readonly upserts?: boolean;
  /** Records of one subtask reach the external system in input order. */
  readonly ordered?: boolean;
  /** The sink finds and aborts work left behind by a crashed run (I4, docs/design.md §3). */
  readonly abortsLingering?: boolean;
  /**
   * A subtask's transaction for one checkpoint becomes visible all at once (one database
   * commit, one rename), never in pieces; the conformance suite then checks that no reader
   * ever sees part of one. Kafka (markers per partition) and rolling part files do not.
   */
  readonly atomicCommits?: boolean;
  /**
   * Safe to run sharded (I9, docs/design.md §3): once a successor took the shard, nothing a
   * paused owner does after it resumes becomes visible or is left behind. A sink earns it
   * by fencing its writes with `SinkContext.ownership` ({@link SinkFence} does the
   * bookkeeping), or by writes a stale owner cannot make count (versioned upserts that never
   * move back). No base class declares it for you. Undeclared, a sharded job refuses the
   * sink (`ConfigurationError` naming `shard`) and the conformance suite reports `zombie`
   * and `double-identity` as not applicable: a sink is safe unsharded first, and sharded
   * once it says so and the suite agrees.
   */
  readonly fences?: boolean;
}
