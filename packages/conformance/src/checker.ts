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
  return out;
}
