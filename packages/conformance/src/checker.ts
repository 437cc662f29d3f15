/** The outcome of checking committed output against the ids the source produced. */
export interface CheckResult {
  readonly expected: number;
  readonly committed: number;
  readonly lost: number[];
  readonly duplicated: number[];
  readonly phantom: number[];
  /** Ids a committed reader saw before the checkpoint that contains them completed (I1, docs/design.md §3). */
  readonly visibleBeforeComplete: number[];
  readonly lingering: string[];
  /** Sinks that declare atomic commits: transactions a reader saw in pieces. */
  readonly torn: string[];
  /** Upserting sinks: what polling readers and the end state showed per key. */
  readonly upserts?: {
    readonly movedBack: string[];
    readonly nondeterministic: string[];
    readonly unordered: string[];
    readonly misrouted: string[];
    readonly stale: string[];
  };
}

/** Counts each id in the committed output: lost, duplicated, phantom (never produced). */
export function checkIds(
  expected: number,
  committed: readonly number[],
): Pick<CheckResult, "lost" | "duplicated" | "phantom" | "committed"> {
  const counts = new Uint32Array(expected);
  const phantom: number[] = [];
  const duplicated: number[] = [];
  for (const id of committed) {
    if (!Number.isInteger(id) || id < 0 || id >= expected) {
      phantom.push(id);
      continue;
    }
    counts[id] = (counts[id] as number) + 1;
    if (counts[id] === 2) duplicated.push(id);
  }
  const lost: number[] = [];
  for (let id = 0; id < expected; id++) if (counts[id] === 0) lost.push(id);
  return { committed: committed.length, lost, duplicated, phantom };
}

const sample = (ids: readonly (number | string)[]) =>
  `${ids.length} (${ids.slice(0, 5).join(", ")}${ids.length > 5 ? ", …" : ""})`;

/** Why a check failed, in words; empty when it passed. */
export function violations(result: CheckResult, allowDuplicates: boolean): string[] {
  const out: string[] = [];
  if (result.lost.length > 0) out.push(`lost ${sample(result.lost)}`);
  if (!allowDuplicates && result.duplicated.length > 0) out.push(`duplicated ${sample(result.duplicated)}`);
  if (result.phantom.length > 0) out.push(`phantom ${sample(result.phantom)}`);
  if (result.visibleBeforeComplete.length > 0) {
    out.push(`visible before their checkpoint completed (I1) ${sample(result.visibleBeforeComplete)}`);
  }
  if (result.lingering.length > 0) out.push(`lingering after recovery (I4) ${sample(result.lingering)}`);
  if (result.torn.length > 0) out.push(`a transaction was visible in pieces (atomicCommits) ${sample(result.torn)}`);
  const u = result.upserts;
  if (u) {
    if (u.movedBack.length > 0) out.push(`a key moved back to an older record (I1) ${sample(u.movedBack)}`);
    if (u.nondeterministic.length > 0)
      out.push(
        `a record was stored with two versions: the version is not deterministic under replay ${sample(u.nondeterministic)}`,
      );
    if (u.unordered.length > 0) out.push(`versions do not increase along the stream ${sample(u.unordered)}`);
    if (u.misrouted.length > 0) out.push(`phantom: a key holds a record that is not its own ${sample(u.misrouted)}`);
    if (u.stale.length > 0) out.push(`lost update: the end state is not each key's last record ${sample(u.stale)}`);
  }
  return out;
}
