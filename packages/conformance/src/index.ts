export { type CheckResult, checkIds, violations } from "./checker.ts";
export {
  ConformanceDefinitionError,
  describeDeclarations,
  type SinkDeclarations,
  sinkDeclarations,
} from "./declarations.ts";
export {
  type ConformanceDefinition,
  type ConformanceRecord,
  type ConformanceSinkFactory,
  type HeldUpsert,
  SCENARIOS,
  type ScenarioName,
  type ScenarioScope,
  type SinkFactoryContext,
  type SinkLifecycle,
} from "./definition.ts";
export type { Exercised } from "./harness/journal.ts";
export { conformanceRecord, KEY_SPACE, keyOf } from "./records.ts";
export type { ScenarioResult } from "./run-scenario.ts";
export { faultPointsOf, PROFILES, type Profile, type ProfileSettings } from "./scenarios.ts";
export {
  conformanceSuite,
  formatBytes,
  formatFailure,
  runConformance,
  runSelected,
  type SelectedScenario,
  type SuiteOptions,
  selectScenarios,
  type TestRunner,
} from "./suite.ts";
