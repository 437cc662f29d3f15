/**
 * Where a record came from: the source, the split inside it and the offset inside the
 * split. Errors about a record name it, so a user can find the bad input.
 * @public
 */
export interface RecordPosition {
  readonly source: string;
  readonly split: string;
  readonly offset: number | string;
}

/** @internal */
export function formatPosition(p: RecordPosition): string {
  return `${p.source}[${p.split}]@${p.offset}`;
}

/**
 * Records travel between stages in batches: parallel arrays rather than one wrapper
 * object a record, so a stage hop costs one channel operation per batch.
 * @public
 */
export interface Batch<T> {
  readonly values: T[];
  readonly positions: RecordPosition[];
  /** Event-time timestamps, present once a watermark strategy assigned them. */
  readonly timestamps: number[] | undefined;
}

export function emptyBatch<T>(withTimestamps: boolean): Batch<T> {
  return { values: [], positions: [], timestamps: withTimestamps ? [] : undefined };
}

/** What flows through a channel: data batches and the control events between them. @internal */
export type StreamElement<T> =
  | { readonly kind: "batch"; readonly batch: Batch<T> }
  | { readonly kind: "barrier"; readonly checkpointId: number }
  | { readonly kind: "watermark"; readonly timestamp: number }
  | { readonly kind: "end" };
