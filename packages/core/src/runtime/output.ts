import type { JobMetrics, TaskLabels } from "../metrics.ts";
import type { Batch, StreamElement } from "../records.ts";
import type { OutputChannel } from "./channel.ts";
import type { Edge } from "./job-graph.ts";
import { keyGroupOf, subtaskForKeyGroup } from "./key-groups.ts";

type Element = StreamElement<unknown>;

/** One outgoing edge of a subtask: its chain of stateless steps, then partitioning. */
class EdgeOutput {
  private readonly edge: Edge;
  private readonly channels: readonly OutputChannel[];
  private readonly ownIndex: number;
  private readonly maxParallelism: number;
  private readonly waited: (seconds: number) => void;
  private nextTarget = 0;

  constructor(
    edge: Edge,
    channels: readonly OutputChannel[],
    ownIndex: number,
    maxParallelism: number,
    waited: (seconds: number) => void,
  ) {
    this.edge = edge;
    this.channels = channels;
    this.ownIndex = ownIndex;
    this.maxParallelism = maxParallelism;
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
    if (parts === 1) {
      await this.push(this.channels[0], { kind: "batch", batch });
      return;
    }
    const split: Array<Batch<unknown> | undefined> = new Array(parts);
    const { values, positions, timestamps } = batch;
    for (let i = 0; i < values.length; i++) {
      const value = values[i];
      const target = subtaskForKeyGroup(
        keyGroupOf(partitioning.keyOf(value), this.maxParallelism),
        this.maxParallelism,
        parts,
      );
      let part = split[target];
      if (!part) {
        part = { values: [], positions: [], timestamps: timestamps ? [] : undefined };
        split[target] = part;
      }
      part.values.push(value);
      part.positions.push(positions[i] as (typeof positions)[number]);
      part.timestamps?.push(timestamps?.[i] as number);
    }
    for (let t = 0; t < parts; t++) {
      const part = split[t];
      if (part) await this.push(this.channels[t], { kind: "batch", batch: part });
    }
  }

  async broadcast(element: Element): Promise<void> {
    for (const channel of this.channels) await this.push(channel, element);
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
    maxParallelism: number,
    metrics: JobMetrics,
  ) {
    this.metrics = metrics;
    this.labels = labels;
    const waited = (seconds: number) => metrics.backpressure(labels, seconds);
    // Reported once at zero, so the series exists before the first wait.
    if (edges.length > 0) waited(0);
    this.edges = edges.map((e) => new EdgeOutput(e.edge, e.channels, labels.subtask, maxParallelism, waited));
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
