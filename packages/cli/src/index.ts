export { type DemoOptions, type DemoSummary, formatSummary, runDemo } from "./demo/demo-command.ts";
export { buildProgram, main } from "./main.ts";
export { type MetricsEndpoint, PrometheusMetrics, serveMetrics } from "./metrics/prometheus-metrics.ts";
export { type RunOptions, runJobCommand } from "./run/run-command.ts";
