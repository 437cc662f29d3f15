/** What one demo record looks like in the committed output. */
export interface DemoRecord {
  readonly id: number;
  readonly key: number;
  /** The record's number within its key, from checkpointed keyed state: 1, 2, 3, … per key. */
  readonly seq: number;
}

/** A record as one JSON line, as the file targets write it and every check reads it back. */
export function demoRecordLine(r: DemoRecord): string {
  return `{"id":${r.id},"key":${r.key},"seq":${r.seq}}`;
}
