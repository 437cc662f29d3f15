/**
 * `@exactly/core/faults`: the named crash points of a sink's checkpoint lifecycle
 * (docs/design.md §6). A connector marks a crash window inside its own commit with
 * `reachFault`; crash tests arm one point with `EXACTLY_FAULT=<point>@<n>` (or `armFault`).
 * Unarmed, reaching a point costs one comparison. Not part of the API a pipeline is written
 * against.
 */
export { armFault, FAULT_POINTS, type FaultPoint, reachFault } from "./faults/fault-points.ts";
