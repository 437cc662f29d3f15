/**
 * Where each subtask runs when a job runs on worker threads: subtask i of every stage on
 * worker i mod W (Flink's slot sharing), so a forward edge (equal parallelism, subtask i to
 * subtask i) never leaves its thread, and only keyBy and rebalance edges between subtasks
 * on different workers become thread channels.
 */
import type { Edge, JobGraph, StageNode } from "../../api/job-graph.ts";

/** Workers a job gets: never more than its largest stage has subtasks. */
export function workerCount(graph: JobGraph, workers: number): number {
  return Math.max(1, Math.min(workers, Math.max(...graph.stages.map((s) => s.parallelism))));
}

export function workerOf(subtask: number, workers: number): number {
  return subtask % workers;
}

/** The job's edges in one order that every thread building the same graph agrees on. */
export function edgesOf(graph: JobGraph): Edge[] {
  return graph.stages.flatMap((stage) => stage.inputs);
}

/** The name of the channel from subtask `from` to subtask `to` of the edge at `edgeIndex`. */
export function channelName(edgeIndex: number, from: number, to: number): string {
  return `${edgeIndex}:${from}->${to}`;
}

/** Every channel that crosses between two workers, with the workers at its two ends. */
export function crossingChannels(
  graph: JobGraph,
  workers: number,
): Array<{ name: string; sender: number; receiver: number }> {
  const crossing: Array<{ name: string; sender: number; receiver: number }> = [];
  edgesOf(graph).forEach((edge, index) => {
    for (let to = 0; to < edge.to.parallelism; to++) {
      for (let from = 0; from < edge.from.parallelism; from++) {
        const sender = workerOf(from, workers);
        const receiver = workerOf(to, workers);
        if (sender !== receiver) crossing.push({ name: channelName(index, from, to), sender, receiver });
      }
    }
  });
  return crossing;
}

/** The workers that run at least one source subtask. */
export function workersWithSources(graph: JobGraph, workers: number): Set<number> {
  const owners = new Set<number>();
  for (const stage of graph.stages)
    if (stage.kind === "source") for (let i = 0; i < stage.parallelism; i++) owners.add(workerOf(i, workers));
  return owners;
}

/**
 * What must be equal for a worker's job to be the main thread's: stage ids, kinds,
 * parallelism, edges and the checkpoint location (when it is a path). A job module that
 * builds a different job in another thread (it read a clock, a random number, state that
 * differs per thread) is refused.
 */
export function jobShape(graph: JobGraph, storage: unknown): string {
  const stage = (s: StageNode) => `${s.kind}:${s.id}:${s.parallelism}`;
  const edges = edgesOf(graph).map((e) => `${e.from.id}->${e.to.id}:${e.partitioning.kind}`);
  const checkpoints = typeof storage === "string" ? storage : "(a storage object)";
  return JSON.stringify({ stages: graph.stages.map(stage), edges, maxParallelism: graph.maxParallelism, checkpoints });
}
