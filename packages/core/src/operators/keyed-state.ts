import { type Key, KeyGroupAssigner } from "../runtime/key-groups.ts";

/** Snapshot of keyed state: key group → entries. JSON-serializable. */
export interface KeyedStateSnapshot {
  readonly groups: Record<string, Array<[Key, unknown]>>;
}

/**
 * The state of one keyed operator subtask, held by key group so a restore with another
 * parallelism takes exactly the groups in the new subtask's range.
 */
export class KeyedStateStore<S> {
  private readonly groups = new Map<number, Map<Key, S>>();
  private readonly keyGroups: KeyGroupAssigner;

  constructor(maxParallelism: number) {
    this.keyGroups = new KeyGroupAssigner(maxParallelism);
  }

  /**
   * The last key looked up and its key group's map: a function reads a key's state and then
   * updates it, and the second lookup should not hash the key again.
   */
  private lastKey: Key | undefined;
  private lastGroup: Map<Key, S> | undefined;

  private group(key: Key, create: boolean): Map<Key, S> | undefined {
    if (key === this.lastKey && this.lastGroup) return this.lastGroup;
    const kg = this.keyGroups.groupOf(key);
    let group = this.groups.get(kg);
    if (!group && create) {
      group = new Map();
      this.groups.set(kg, group);
    }
    if (group) {
      this.lastKey = key;
      this.lastGroup = group;
    }
    return group;
  }

  get(key: Key): S | undefined {
    return this.group(key, false)?.get(key);
  }

  set(key: Key, value: S): void {
    (this.group(key, true) as Map<Key, S>).set(key, value);
  }

  delete(key: Key): void {
    this.group(key, false)?.delete(key);
  }

  *entries(): IterableIterator<[Key, S]> {
    for (const group of this.groups.values()) yield* group.entries();
  }

  /** A deep copy as JSON text, taken synchronously at the barrier so later updates stay out. */
  snapshot(): string {
    const groups: Record<string, Array<[Key, S]>> = {};
    for (const [kg, group] of this.groups) if (group.size > 0) groups[kg] = [...group.entries()];
    return JSON.stringify({ groups });
  }

  /** Takes the key groups in `[start, end]` from every restored snapshot. */
  restore(snapshots: readonly KeyedStateSnapshot[], range: { start: number; end: number }): void {
    this.lastKey = undefined;
    this.lastGroup = undefined;
    for (const snapshot of snapshots) {
      for (const [kg, entries] of Object.entries(snapshot.groups)) {
        const id = Number(kg);
        if (id < range.start || id > range.end) continue;
        const group = new Map<Key, S>();
        for (const [key, value] of entries) group.set(key, value as S);
        this.groups.set(id, group);
      }
    }
  }
}
