import type { CheckpointStorage } from "@exactly/core";
import type { ConformanceDefinition, ScenarioScope } from "./definition.ts";
import { coveredIds } from "./harness/run-child.ts";
import { KEY_SPACE, keyOf } from "./records.ts";

/**
 * A reader that polls the sink's external system through a scenario's runs (every ~100 ms
 * while a child runs, and once more after it ended, which is what a reader sees after a
 * crash) and remembers what it saw, for the checks that a final read cannot make:
 *  - ids visible before the checkpoint that holds them completed (I1, docs/design.md §3);
 *  - the poll at which each id was first seen, so a transaction seen in pieces shows;
 *  - for upserting sinks, per key, the record held and its stored version: a key that
 *    moves back to an older record, or a record stored with two versions.
 */
export class Observer {
  private readonly definition: ConformanceDefinition;
  private readonly scope: ScenarioScope;
  private readonly records: number;
  /** The job's checkpoints, when ids visible before their checkpoint completed are to be caught. */
  private readonly watchEarly: CheckpointStorage | undefined;
  polls = 0;
  /** Poll index at which each id was first visible; -1 never. */
  readonly firstSeen: Int32Array;
  readonly early = new Set<number>();
  private readonly held = new Map<string, { id: number; version: number }>();
  private readonly versions = new Map<number, number>();
  readonly movedBack: string[] = [];
  readonly nondeterministic: string[] = [];
  readonly misrouted: string[] = [];
  readonly unordered: string[] = [];

  constructor(
    definition: ConformanceDefinition,
    scope: ScenarioScope,
    records: number,
    watchEarly: CheckpointStorage | undefined,
  ) {
    this.definition = definition;
    this.scope = scope;
    this.records = records;
    this.watchEarly = watchEarly;
    this.firstSeen = new Int32Array(records).fill(-1);
  }

  /** One read, as any reader would make it. */
  readonly poll = async (phase: "running" | "ended" = "running"): Promise<number[]> => {
    const index = this.polls++;
    if (this.definition.readUpserts) {
      const held = await this.definition.readUpserts(this.scope, phase);
      this.observeUpserts(held);
      return held.map((h) => h.id);
    }
    const visible = await (this.definition.readCommitted as NonNullable<ConformanceDefinition["readCommitted"]>)(
      this.scope,
      phase,
    );
    // Read the checkpoints after the reader: metadata is durable before any commit, so this
    // order never blames a sink for the runtime's own timing.
    const covered = this.watchEarly ? await coveredIds(this.watchEarly) : undefined;
    for (const id of visible) {
      if (id >= 0 && id < this.records && this.firstSeen[id] === -1) this.firstSeen[id] = index;
      if (covered && !covered(id)) this.early.add(id);
    }
    return visible;
  };

  private observeUpserts(held: readonly { key: string; id: number; version: number }[]): void {
    const note = (list: string[], text: string) => {
      if (list.length < 20) list.push(text);
    };
    for (const { key, id, version } of held) {
      if (!Number.isInteger(id) || id < 0 || id >= this.records || keyOf(id) !== key) {
        note(this.misrouted, `${key} holds id ${id}, which is not a record of that key`);
        continue;
      }
      const stored = this.versions.get(id);
      if (stored !== undefined && stored !== version) {
        note(this.nondeterministic, `record ${id} of ${key} stored with version ${stored}, later ${version}`);
      }
      this.versions.set(id, version);
      const before = this.held.get(key);
      if (before && id < before.id) note(this.movedBack, `${key} moved back from record ${before.id} to ${id}`);
      if (before && id > before.id && version <= before.version) {
        note(
          this.unordered,
          `${key}: record ${id} has version ${version}, not above record ${before.id}'s ${before.version}`,
        );
      }
      this.held.set(key, { id, version });
    }
  }

  /** Keys whose end state is not their last record: what exactly-once upserts must leave. */
  staleKeys(): string[] {
    const out: string[] = [];
    for (let k = 0; k < Math.min(KEY_SPACE, this.records); k++) {
      const last = k + Math.floor((this.records - 1 - k) / KEY_SPACE) * KEY_SPACE;
      const held = this.held.get(keyOf(k));
      if (held?.id !== last)
        out.push(`${keyOf(k)} holds ${held ? `record ${held.id}` : "nothing"}, its last is ${last}`);
    }
    return out;
  }

  /** Transactions seen in pieces: some of their ids first visible at an earlier read than others. */
  torn(transactions: readonly { checkpointId: number; subtask: number; ids: readonly number[] }[]): string[] {
    const out: string[] = [];
    for (const txn of transactions) {
      // Ids never seen are lost, and reported so; the pieces are among those seen.
      const seen = txn.ids.map((id) => this.firstSeen[id] ?? -1).filter((s) => s >= 0);
      if (seen.length === 0) continue;
      const first = Math.min(...seen);
      const withFirst = seen.filter((s) => s === first).length;
      if (withFirst === seen.length) continue;
      out.push(
        `checkpoint ${txn.checkpointId} subtask ${txn.subtask}: read ${first} saw ${withFirst} of its ${seen.length} records`,
      );
    }
    return out;
  }
}
