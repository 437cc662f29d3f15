import { RecordProcessingError } from "../../errors.ts";
import type { JobMetrics, TaskLabels } from "../../metrics.ts";
import { type Key, KeyGroupAssigner, subtaskForKeyGroup } from "../../operators/key-groups.ts";
import type { Batch, RecordPosition, StreamElement } from "../../records.ts";
import { firstGlobalSubtask, globalParallelism, type ShardSpec } from "../../shards/shard-spec.ts";
import type { Edge, JobGraph } from "../api/job-graph.ts";
import type { OutputChannel } from "./channel.ts";

type Element = StreamElement<unknown>;

/** In `owners`: a key group another shard owns (§2, Shards). */
const OTHER_SHARD = 0xffff;

/** One outgoing edge of a subtask: its chain of stateless steps, then partitioning. */
class EdgeOutput {
  private readonly edge: Edge;
  private readonly channels: readonly OutputChannel[];
  private readonly ownIndex: number;
  private readonly keyGroups: KeyGroupAssigner;
  /** The subtask (channel) that owns each key group, for a keyBy edge; OTHER_SHARD where another shard does. */
  private readonly owners: Uint16Array;
  private readonly shard: ShardSpec | undefined;
  private readonly waited: (seconds: number) => void;
  private nextTarget = 0;
  /** Each record's target subtask while a batch is split by key; kept for the next batch. */
  private targets = new Int32Array(0);

  constructor(
    edge: Edge,
    channels: readonly OutputChannel[],
    ownIndex: number,
    graph: JobGraph,
    waited: (seconds: number) => void,
  ) {
    const { maxParallelism, shard } = graph;
    this.edge = edge;
    this.channels = channels;
    this.ownIndex = ownIndex;
    this.shard = shard;
    this.keyGroups = new KeyGroupAssigner(maxParallelism);
    this.owners = new Uint16Array(maxParallelism);
    const first = firstGlobalSubtask(shard, channels.length);
    const all = globalParallelism(shard, channels.length);
    for (let kg = 0; kg < maxParallelism; kg++) {
      const local = subtaskForKeyGroup(kg, maxParallelism, all) - first;
      this.owners[kg] = local >= 0 && local < channels.length ? local : OTHER_SHARD;
    }
    this.waited = waited;
  }

  /** Pushes one element; only a full channel costs a promise and a clock read (backpressure). */
  private push(channel: OutputChannel | undefined, element: Element): Promise<void> | undefined {
    const wait = channel?.push(element);
    if (wait === undefined) return undefined;
    const start = performance.now();
    return wait.then(() => this.waited((performance.now() - start) / 1000));
  }

  async emit(input: Batch<unknown>): Promise<void> {
    let batch = input;
    for (const step of this.edge.chain) {
      batch = step(batch);
      if (batch.values.length === 0) return;
    }
    const partitioning = this.edge.partitioning;
    if (partitioning.kind === "forward") {
      await this.push(this.channels[this.ownIndex], { kind: "batch", batch });
      return;
    }
    if (partitioning.kind === "rebalance") {
      const target = this.nextTarget;
      this.nextTarget = (target + 1) % this.channels.length;
      await this.push(this.channels[target], { kind: "batch", batch });
      return;
    }
    const parts = this.channels.length;
    if (parts === 1 && !this.shard) {
      await this.push(this.channels[0], { kind: "batch", batch });
      return;
    }
    const split = this.split(batch, partitioning.keyOf, parts);
    for (let t = 0; t < parts; t++) {
      const part = split[t];
      if (part) await this.push(this.channels[t], { kind: "batch", batch: part });
    }
  }

  /**
   * A batch's records by the subtask that owns their key: targets first, then arrays of the
   * exact size each part needs, so no part grows (and drops) its arrays as it is filled.
   */
  private split(
    batch: Batch<unknown>,
    keyOf: (value: unknown) => Key,
    parts: number,
  ): Array<Batch<unknown> | undefined> {
    const { values, positions, timestamps } = batch;
    const n = values.length;
    if (this.targets.length < n) this.targets = new Int32Array(Math.max(n, 2 * this.targets.length));
    const targets = this.targets;
    const { keyGroups, owners } = this;
    const counts = new Int32Array(parts);
    for (let i = 0; i < n; i++) {
      const target = owners[keyGroups.groupOf(keyOf(values[i]))] as number;
      if (target === OTHER_SHARD) throw this.otherShardsKey(values[i], positions[i], keyOf);
      targets[i] = target;
      counts[target] = (counts[target] as number) + 1;
    }
    const split = new Array<Batch<unknown> | undefined>(parts);
    for (let t = 0; t < parts; t++) {
      const count = counts[t] as number;
      if (count === 0) continue;
      split[t] = {
        values: new Array(count),
        positions: new Array(count),
        timestamps: timestamps ? new Array(count) : undefined,
      };
      counts[t] = 0;
    }
    for (let i = 0; i < n; i++) {
      const t = targets[i] as number;
      const part = split[t] as Batch<unknown>;
      const at = counts[t] as number;
      counts[t] = at + 1;
      part.values[at] = values[i];
      part.positions[at] = positions[i] as RecordPosition;
      if (part.timestamps) part.timestamps[at] = timestamps?.[i] as number;
    }
    return split;
  }

  async broadcast(element: Element): Promise<void> {
    for (const channel of this.channels) await this.push(channel, element);
  }

  /**
   * Shards exchange no records: a keyed stage of shard k can take only keys of its key-group
   * range, so its sources must read only those (partitioned input, as Kafka Streams needs).
   */
  private otherShardsKey(value: unknown, position: RecordPosition | undefined, keyOf: (value: unknown) => Key) {
    const { maxParallelism } = this.keyGroups;
    const shard = this.shard as ShardSpec;
    const group = this.keyGroups.groupOf(keyOf(value));
    const owner = Math.floor(
      subtaskForKeyGroup(group, maxParallelism, shard.count * this.channels.length) / this.channels.length,
    );
    return new RecordProcessingError(
      this.edge.from.id,
      position,
      new Error(
        `keyBy into ${this.edge.to.id}: the key's group ${group} belongs to shard ${owner} of ${shard.count}, and this is shard ${shard.index}; ` +
          "shards exchange no records, so each shard's sources must read only keys of its own key groups (docs/design.md §2, Shards)",
      ),
    );
  }
}

/** Everything one subtask emits, fanned out over its outgoing edges. */
export class TaskOutput {
  private readonly edges: EdgeOutput[];
  private readonly metrics: JobMetrics;
  private readonly labels: TaskLabels;

  constructor(
    edges: ReadonlyArray<{ edge: Edge; channels: readonly OutputChannel[] }>,
    labels: TaskLabels,
    graph: JobGraph,
    metrics: JobMetrics,
  ) {
    this.metrics = metrics;
    this.labels = labels;
    const waited = (seconds: number) => metrics.backpressure(labels, seconds);
    // Reported once at zero, so the series exists before the first wait.
    if (edges.length > 0) waited(0);
    this.edges = edges.map((e) => new EdgeOutput(e.edge, e.channels, labels.subtask, graph, waited));
  }

  /** Sends a batch on every edge; it counts as sent on before the edges' stateless steps. */
  async emitBatch(batch: Batch<unknown>): Promise<void> {
    this.metrics.recordsOut(this.labels, batch.values.length);
    for (const edge of this.edges) await edge.emit(batch);
  }

  async broadcast(element: Element): Promise<void> {
    for (const edge of this.edges) await edge.broadcast(element);
  }
}
