/**
 * The folder of the demo's output directory that holds its checkpoints (unless a target keeps
 * them elsewhere): the demo writes there, and `inspect` points there when it finds none.
 */
export const DEMO_CHECKPOINT_DIR = ".checkpoints";
