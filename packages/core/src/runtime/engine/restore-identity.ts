/**
 * Whose checkpoint a job may restore (docs/design.md §2, Recovery; I10 in §3). A checkpoint
 * records the job's identity and every stage's uid and kind; a job restores only a
 * checkpoint of its own id, and only when every stage the checkpoint holds state of is still
 * in the job (under its uid, or under a new one that declares it `renamedFrom`). Dropping a
 * source's or an operator's state takes the user's word (`allowNonRestoredState`, naming it);
 * a sink's state is never dropped, since it holds work pre-committed and not yet committed.
 */
import type { CheckpointMetadata, RestoredCheckpoint } from "../../checkpoint/checkpoint-storage.ts";
import { ConfigurationError } from "../../errors.ts";
import type { Logger } from "../../logger.ts";
import type { JobGraph, StageNode } from "../api/job-graph.ts";

/** Who a job is: its display name and the id its checkpoints are kept under (default: the name). @public */
export interface JobIdentity {
  readonly name: string;
  readonly id: string;
  /** The group of a job run as several (docs/design.md §2, Groups): each keeps checkpoints of its own. */
  readonly group?: string;
}

type StageKind = StageNode["kind"];

/** The identity a checkpoint was written by; checkpoints from before it was recorded name only the job. */
export function identityOf(metadata: CheckpointMetadata): JobIdentity {
  return metadata.job ?? { name: metadata.jobName, id: metadata.jobName };
}

function article(kind: StageKind): string {
  return kind === "operator" ? "an" : "a";
}

function describeStage(kind: StageKind | undefined, uid: string): string {
  return `${kind ?? "stage"} "${uid}"`;
}

/**
 * The part of `restored` this job takes: its stages renamed to their new uids, and the
 * state of stages `allowNonRestoredState` names left out (each logged). Throws a
 * {@link ConfigurationError} for a checkpoint of another job, a stage whose kind changed, a
 * rename that does not fit, and state nothing in the job takes.
 */
export function admitRestored(
  restored: RestoredCheckpoint,
  graph: JobGraph,
  job: JobIdentity,
  allowNonRestoredState: readonly string[],
  logger: Logger,
): RestoredCheckpoint {
  const { metadata } = restored;
  const id = metadata.checkpointId;
  const writer = identityOf(metadata);
  if (writer.id === job.id && writer.group !== job.group)
    throw new ConfigurationError(
      "group",
      `checkpoint ${id} at this location was written by ${writer.group === undefined ? "the job run whole" : `group "${writer.group}"`} of job "${writer.name}", ` +
        `and this process runs ${job.group === undefined ? "the job whole" : `its group "${job.group}"`}: each group keeps its checkpoints in a folder of its own (group-<name>)`,
    );
  if (writer.id !== job.id)
    throw new ConfigurationError(
      "id",
      `checkpoint ${id} at this location was written by job "${writer.name}" (id "${writer.id}"), and this job is "${job.name}" (id "${job.id}"): ` +
        "a checkpoint location holds one job's checkpoints; give this job a location of its own, or the id of the job that wrote them",
    );

  const stages = new Map(graph.stages.map((s) => [s.id, s]));
  const renamed: Record<string, string> = {};
  for (const stage of graph.stages) {
    const from = stage.renamedFrom;
    if (from === undefined || metadata.stages[from] === undefined) continue;
    if (stages.has(from))
      throw new ConfigurationError(
        "renamedFrom",
        `${describeStage(stage.kind, stage.id)} is declared renamedFrom "${from}", which is still a stage of this job`,
      );
    if (metadata.stages[stage.id] !== undefined)
      throw new ConfigurationError(
        "renamedFrom",
        `checkpoint ${id} holds state of both "${from}" and "${stage.id}": ${describeStage(stage.kind, stage.id)} cannot take both; remove renamedFrom`,
      );
    renamed[stage.id] = from;
  }
  const newUidOf = new Map(Object.entries(renamed).map(([to, from]) => [from, to]));

  // Kinds first: a uid that moved to another kind of stage is the clearer cause.
  const unknown: string[] = [];
  for (const [uid, old] of Object.entries(metadata.stages)) {
    const current = stages.get(newUidOf.get(uid) ?? uid);
    if (!current) unknown.push(uid);
    else if (old.kind !== undefined && old.kind !== current.kind)
      throw new ConfigurationError(
        "uid",
        `"${uid}" is ${article(old.kind)} ${old.kind} in checkpoint ${id} and ${article(current.kind)} ${current.kind} in this job: ` +
          "a stage's state is restored only into a stage of its kind; give one of them another uid",
      );
  }
  const dropped = new Set<string>();
  for (const uid of unknown) {
    const kind = metadata.stages[uid]?.kind;
    if (kind === "sink")
      throw new ConfigurationError(
        "renamedFrom",
        `checkpoint ${id} holds the state of sink "${uid}", which this job does not have: its pre-committed work would be lost, and a sink's state is never dropped. ` +
          `If the sink was renamed, declare renamedFrom: "${uid}" on it; \`exactly lingering\` lists what "${uid}" left open`,
      );
    if (!allowNonRestoredState.includes(uid))
      throw new ConfigurationError(
        "allowNonRestoredState",
        `checkpoint ${id} holds the state of ${describeStage(kind, uid)}, which this job does not have: ` +
          `keep a stage with that uid (or declare renamedFrom: "${uid}"), or name it in allowNonRestoredState (exactly run --allow-non-restored-state ${uid}) to start without it`,
      );
    dropped.add(uid);
  }
  for (const uid of dropped)
    logger.warn(
      `dropping the state of ${describeStage(metadata.stages[uid]?.kind, uid)} of checkpoint ${id} (allowNonRestoredState)`,
      { checkpointId: id, uid },
    );

  if (Object.keys(renamed).length === 0 && dropped.size === 0) return restored;
  return { ...rekey(restored, newUidOf, dropped), renamed };
}

/** The checkpoint with its stages' uids, task keys and task states moved to the new uids. */
function rekey(
  restored: RestoredCheckpoint,
  newUidOf: ReadonlyMap<string, string>,
  dropped: ReadonlySet<string>,
): RestoredCheckpoint {
  // A task key is `<uid>/<subtask>`; a uid may itself contain slashes, the subtask never does.
  const move = (key: string): string | undefined => {
    const slash = key.lastIndexOf("/");
    const uid = key.slice(0, slash);
    if (dropped.has(uid)) return undefined;
    const to = newUidOf.get(uid);
    return to === undefined ? key : `${to}${key.slice(slash)}`;
  };
  const stages: Record<string, CheckpointMetadata["stages"][string]> = {};
  for (const [uid, stage] of Object.entries(restored.metadata.stages))
    if (!dropped.has(uid)) stages[newUidOf.get(uid) ?? uid] = stage;
  const taskStates: Record<string, string> = {};
  for (const [key, handle] of Object.entries(restored.metadata.taskStates)) {
    const to = move(key);
    if (to !== undefined) taskStates[to] = handle;
  }
  const states = new Map<string, unknown>();
  for (const [key, state] of restored.states) {
    const to = move(key);
    if (to !== undefined) states.set(to, state);
  }
  return { metadata: { ...restored.metadata, stages, taskStates }, states };
}
