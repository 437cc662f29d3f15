/**
 * Work a two-phase sink leaves open in its external system, seen from outside any job: for
 * the operator's tool (`exactly lingering`, docs/operating.md), not for the sinks, which clean
 * up their own on recovery (I4, docs/design.md §3). A job that is killed and never restarted
 * leaves its open transactions there until the system's own timeout, if it has one: a Kafka
 * transaction holds back every `read_committed` reader of its partitions, a prepared Postgres
 * transaction holds its row locks and the vacuum horizon, an S3 multipart upload is billed.
 *
 * Each transactional connector has one finder. Work is matched against checkpoints by
 * `reference`: a finder says which references a sink subtask's checkpointed state holds. Work
 * a checkpoint holds as pre-committed is spared, since a restart from that checkpoint commits
 * it; work a checkpoint holds only as open (begun after its barrier) is what a restart aborts
 * anyway, so the tool may end it too.
 * @public
 */
export interface LingeringWork {
  /** What the external system calls it: a transactional id, a prepared transaction's gid, an object key. */
  readonly id: string;
  /** What a checkpointed state would reference it by (see {@link LingeringWorkFinder.referencesIn}). */
  readonly reference: string;
  /** When it began, in ms since the epoch; undefined when the system does not say. */
  readonly startedAt: number | undefined;
  /** Anything else worth showing an operator (partitions it blocks, the upload id). */
  readonly detail: string;
}

/**
 * Finds a sink's lingering work from outside any job (`exactly lingering`, docs/operating.md):
 * lists it, says which of it a checkpointed state references, and aborts one piece.
 * @public
 */
export interface LingeringWorkFinder {
  /** What is searched, for the tool's output: the system and the prefix. */
  readonly description: string;
  /** Every open piece of work under the sink's prefix, read from the system itself. */
  list(): Promise<LingeringWork[]>;
  /** The references a sink subtask's checkpointed state holds; none for another sink's state. */
  referencesIn(sinkState: unknown): StateReferences;
  /** Ends one piece of work without committing it; work that ended meanwhile is fine. */
  abort(work: LingeringWork): Promise<void>;
  close(): Promise<void>;
}

/** The work a sink subtask's checkpointed state references. @public */
export interface StateReferences {
  /** Pre-committed at the checkpoint: a restart from it commits these. */
  readonly pending: readonly string[];
  /** Open at the checkpoint, begun after its barrier: a restart from it aborts these. */
  readonly open: readonly string[];
}

/**
 * The transactions of a `TwoPhaseCommitState`-shaped state, or none when `state` is not
 * one: what a finder reads its references from.
 * @internal
 */
export function transactionsInState(state: unknown): { pending: unknown[]; open: unknown[] } {
  const s = state as { pending?: unknown; current?: { txn?: unknown } } | null | undefined;
  const present = (t: unknown) => t !== undefined && t !== null;
  if (!s || typeof s !== "object") return { pending: [], open: [] };
  const pending = Array.isArray(s.pending) ? s.pending.map((p) => (p as { txn?: unknown } | null)?.txn) : [];
  const open = s.current && typeof s.current === "object" ? [s.current.txn] : [];
  return { pending: pending.filter(present), open: open.filter(present) };
}
