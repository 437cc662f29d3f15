/**
 * Resolves after `ms` milliseconds; at once for 0 or less. Node turns a negative delay into 1
 * ms with a TimeoutNegativeWarning, which only tells that a delay was computed wrong: a caller's
 * delay that has already passed is not a warning.
 */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));
