import { isAbsolute, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { type CheckpointStorage, FileSystemCheckpointStorage } from "@exactly/core";
import type {
  ConformanceDefinition,
  ConformanceSinkFactory,
  ScenarioScope,
  SinkFactoryContext,
} from "../definition.ts";
import { CHECKPOINTS, type ChildConfig } from "./child-protocol.ts";

/** Where a child process finds the author's sink factory, from the definition. */
export function sinkModuleConfig(
  definition: ConformanceDefinition,
): Pick<ChildConfig, "sinkModule" | "sinkExport" | "sinkOptions" | "checkpointStorageExport"> {
  const module = definition.sinkModule;
  return {
    sinkModule: module instanceof URL || module.startsWith("file:") ? fileURLToPath(module) : module,
    sinkExport: definition.sinkExport ?? "createSink",
    sinkOptions: definition.sinkOptions ?? null,
    checkpointStorageExport: definition.checkpointStorageExport ?? null,
  };
}

async function importModule(sinkModule: string): Promise<Record<string, unknown>> {
  return (await import(isAbsolute(sinkModule) ? pathToFileURL(sinkModule).href : sinkModule)) as Record<
    string,
    unknown
  >;
}

/**
 * The scenario job's checkpoint storage, in the child and in the test process alike: the
 * definition's `checkpointStorageExport`, else the file system in the scenario's directory.
 */
export async function scenarioCheckpointStorage(
  where: Pick<ChildConfig, "sinkModule" | "sinkOptions" | "checkpointStorageExport">,
  scope: ScenarioScope,
): Promise<CheckpointStorage> {
  if (where.checkpointStorageExport === null) return new FileSystemCheckpointStorage(join(scope.dir, CHECKPOINTS));
  const make = (await importModule(where.sinkModule))[where.checkpointStorageExport];
  if (typeof make !== "function") {
    throw new Error(
      `${where.sinkModule} does not export a checkpoint storage factory named ${where.checkpointStorageExport}`,
    );
  }
  const context: SinkFactoryContext = { scope, options: where.sinkOptions };
  return (make as (context: SinkFactoryContext) => CheckpointStorage)(context);
}

/** Loads the author's sink factory in a child process: the export `sinkExport` of `sinkModule`. */
export async function loadSinkFactory(sinkModule: string, sinkExport: string): Promise<ConformanceSinkFactory> {
  const module = await importModule(sinkModule);
  const factory = module[sinkExport];
  if (typeof factory !== "function") {
    throw new Error(`${sinkModule} does not export a sink factory named ${sinkExport}`);
  }
  return factory as ConformanceSinkFactory;
}
