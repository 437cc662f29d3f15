/**
 * The testing entry of `@exactly/core`: what crash tests and the conformance suite use, kept
 * out of the public API: the fault points (also `@exactly/core/faults`, which production code imports),
 * the seeded PRNG and sibling scripts for child processes (also `@exactly/core/internal`).
 */
export { armFault, FAULT_POINTS, type FaultPoint, reachFault } from "./faults/fault-points.ts";
export { siblingScript } from "./util/child-script.ts";
export { seededRandom } from "./util/seeded-random.ts";
