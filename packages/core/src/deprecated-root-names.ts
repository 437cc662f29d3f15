/**
 * Connector plumbing the root entry exported before `@exactly/core/internal` held it. Still
 * exported from the root so that code importing it from there keeps working; hidden from
 * the API reference, which documents the names a pipeline or a custom sink is written with.
 */
import * as internal from "./internal.ts";

/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export type ClaimHolder = internal.ClaimHolder;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export type ClaimResult = internal.ClaimResult;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export const claimInProcess = internal.claimInProcess;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export const releaseInProcess = internal.releaseInProcess;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export const classifyFailure = internal.classifyFailure;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export const errorChain = internal.errorChain;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export const DEFAULT_MAX_RESTART_DELAY_MS = internal.DEFAULT_MAX_RESTART_DELAY_MS;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export const IoTurns = internal.IoTurns;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export type IoTurns = internal.IoTurns;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export type JobOrigin = internal.JobOrigin;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export const originOf = internal.originOf;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export const RestartBackoff = internal.RestartBackoff;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export type RestartBackoff = internal.RestartBackoff;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export type RestartDecision = internal.RestartDecision;
/** @deprecated Import it from `@exactly/core/internal`. @hidden */
export const transactionsInState = internal.transactionsInState;
