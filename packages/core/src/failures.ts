/**
 * How a failure is classified, for the restart strategy (runtime/runner/restart-strategy.ts), the
 * coordinator (a failed checkpoint) and metrics (restarts by kind):
 *
 * - **transient**: a connection refused or reset, a timeout, a server that is restarting;
 *   it may pass, so it is retried or restarted however often it repeats;
 * - **permanent**: a setting, a record that cannot be written or processed, a lost
 *   transaction, a checkpoint location another process owns; a restart would repeat it;
 * - **other**: anything else, restarted a bounded number of times without progress.
 */
import { type ErrorCode, ExactlyError, TransientError } from "./errors.ts";

/**
 * How a failure is classified: `transient` may pass, so it is retried or restarted however often it
 * repeats; `permanent` would repeat on a restart; `other` is restarted a bounded number of times
 * without progress.
 * @public
 */
export type FailureKind = "transient" | "permanent" | "other";

const TRANSIENT_CODES = new Set(["ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "EPIPE", "EAI_AGAIN", "EBUSY", "EAGAIN"]);

/**
 * A process that lost its shard to another owner: its next attempt waits for the shard again
 * (standing by while the new owner renews it), however often that happens.
 */
const STANDBY_CODES: ReadonlySet<string> = new Set<ErrorCode>(["SHARD_LEASE_LOST", "SHARD_FENCED"]);

/** Whether the failure is this process losing its shard to another owner (shards/). */
export function isLostShard(error: unknown): boolean {
  return errorChain(error).some((e) => e instanceof ExactlyError && STANDBY_CODES.has(e.code));
}

/** The default classification: our TransientError, a lost shard, or a network errno that may pass. @public */
export function isTransientByDefault(error: unknown): boolean {
  if (error instanceof TransientError) return true;
  if (error instanceof ExactlyError && STANDBY_CODES.has(error.code)) return true;
  const code = (error as { code?: unknown } | undefined)?.code;
  return typeof code === "string" && TRANSIENT_CODES.has(code);
}

/** Error codes whose failure no restart can get past, whatever caused them. */
const ALWAYS_PERMANENT: ReadonlySet<string> = new Set<ErrorCode>([
  "CONFIGURATION",
  "TRANSACTION_LOST",
  "CHECKPOINT_OWNERSHIP",
]);
/** Codes of failures that repeat on a restart unless their cause is transient (a record written while the server was down). */
const PERMANENT_UNLESS_CAUSE_PASSES: ReadonlySet<string> = new Set<ErrorCode>(["RECORD_WRITE", "RECORD_PROCESSING"]);

/** The error, its causes, and the errors an aggregate holds, outermost first. @internal */
export function errorChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  const visit = (e: unknown) => {
    if (e === undefined || e === null || chain.includes(e) || chain.length > 32) return;
    chain.push(e);
    if (typeof e !== "object") return;
    const { cause, errors, originalError } = e as { cause?: unknown; errors?: unknown; originalError?: unknown };
    visit(cause);
    visit(originalError);
    if (Array.isArray(errors)) for (const inner of errors) visit(inner);
  };
  visit(error);
  return chain;
}

/**
 * Classifies a failure: `isTransient` are the classifiers of the job's sinks, sources and
 * checkpoint storage, which know their clients' errors (a lost Kafka connection, a
 * Postgres admin shutdown, Redis LOADING); each is asked about every error of the chain.
 * @internal
 */
export function classifyFailure(
  error: unknown,
  isTransient: ReadonlyArray<(error: unknown) => boolean>,
  classify?: (error: unknown) => FailureKind | undefined,
): FailureKind {
  const own = classify?.(error);
  if (own) return own;
  const chain = errorChain(error);
  const codes = chain.map((e) => (e instanceof ExactlyError ? e.code : undefined));
  if (codes.some((code) => code !== undefined && ALWAYS_PERMANENT.has(code))) return "permanent";
  if (chain.some((e) => e instanceof ExactlyError && e.permanent)) return "permanent";
  const passes = (e: unknown) => isTransientByDefault(e) || isTransient.some((check) => safely(check, e));
  if (chain.some(passes)) return "transient";
  if (codes.some((code) => code !== undefined && PERMANENT_UNLESS_CAUSE_PASSES.has(code))) return "permanent";
  return "other";
}

function safely(check: (error: unknown) => boolean, error: unknown): boolean {
  try {
    return check(error);
  } catch {
    return false;
  }
}
