/**
 * `@exactly/core/testing`: what crash tests and the conformance suite use, kept out of the
 * public API. A connector marks a crash window inside its own commit with `reachFault`;
 * tests arm one point with `EXACTLY_FAULT=<point>@<n>`.
 */
export { armFault, FAULT_POINTS, type FaultPoint, reachFault } from "./faults/fault-points.ts";
export { siblingScript } from "./util/child-script.ts";
export { seededRandom } from "./util/seeded-random.ts";
