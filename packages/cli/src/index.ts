export { type DemoOptions, type DemoSummary, formatSummary, runDemo } from "./demo/demo-command.ts";
export { buildProgram, main } from "./main.ts";
