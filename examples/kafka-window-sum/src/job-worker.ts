/** The window-sum job in a child process, so the runner can kill it with SIGKILL. */
import { silentLogger } from "@exactly/core";
import { startWindowSumJob, type WindowSumConfig } from "./window-sum.ts";

const config = JSON.parse(process.env.WINDOW_SUM_CONFIG ?? "{}") as WindowSumConfig;
await (await startWindowSumJob(config, silentLogger)).result;
