/**
 * `@exactly/core/internal`: helpers the built-in connectors share with the runtime. They
 * carry no stability promise and are not part of the API a pipeline or a custom sink is
 * written against.
 */

export {
  applyRetention,
  type CheckpointFolders,
  inspectFolders,
  listCompleted,
  loadLatest,
  METADATA,
  readMetadata,
} from "./checkpoint/checkpoint-folders.ts";
export { hashKey, keyGroupOf, keyGroupRange } from "./operators/key-groups.ts";
export { siblingScript } from "./util/child-script.ts";
export {
  fsyncDirectory,
  isAlreadyExists,
  isNotFound,
  writeAll,
  writeFileAtomic,
  writeFileDurable,
} from "./util/durable-fs.ts";
export { seededRandom } from "./util/seeded-random.ts";
