export { runDemo } from "./demo/demo-command.ts";
export type { DemoOptions, DemoSummary } from "./demo/demo-options.ts";
export { formatSummary } from "./demo/summary-printer.ts";
export { DemoFailedError } from "./demo/supervisor.ts";
export { buildProgram, main } from "./main.ts";
export { type MetricsEndpoint, PrometheusMetrics, serveMetrics } from "./metrics/prometheus-metrics.ts";
export { type RunOptions, runJobCommand } from "./run/run-command.ts";
