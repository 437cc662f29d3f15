import { isAbsolute } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { ConformanceDefinition, ConformanceSinkFactory } from "../definition.ts";
import type { ChildConfig } from "./child-protocol.ts";

/** Where a child process finds the author's sink factory, from the definition. */
export function sinkModuleConfig(
  definition: ConformanceDefinition,
): Pick<ChildConfig, "sinkModule" | "sinkExport" | "sinkOptions"> {
  const module = definition.sinkModule;
  return {
    sinkModule: module instanceof URL || module.startsWith("file:") ? fileURLToPath(module) : module,
    sinkExport: definition.sinkExport ?? "createSink",
    sinkOptions: definition.sinkOptions ?? null,
  };
}

/** Loads the author's sink factory in a child process: the export `sinkExport` of `sinkModule`. */
export async function loadSinkFactory(sinkModule: string, sinkExport: string): Promise<ConformanceSinkFactory> {
  const url = isAbsolute(sinkModule) ? pathToFileURL(sinkModule).href : sinkModule;
  const module = (await import(url)) as Record<string, unknown>;
  const factory = module[sinkExport];
  if (typeof factory !== "function") {
    throw new Error(`${sinkModule} does not export a sink factory named ${sinkExport}`);
  }
  return factory as ConformanceSinkFactory;
}
