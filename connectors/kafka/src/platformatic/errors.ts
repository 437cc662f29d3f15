/**
 * @platformatic/kafka's errors in the port's terms: a broker's refusal as an error whose `type`
 * is Kafka's error name and `retriable` Kafka's own verdict (what kafka-errors.ts reads), a
 * lost connection or a timeout as a `TransientError`, credentials the brokers refuse as a
 * `ConfigurationError` naming `sasl` (a restart would meet the same refusal).
 */
import { ConfigurationError, TransientError } from "@exactly/core";

/** A broker's refusal: `type` names Kafka's error code (PRODUCER_FENCED, CONCURRENT_TRANSACTIONS, …). */
export class KafkaProtocolError extends Error {
  readonly type: string;
  readonly retriable: boolean;
  constructor(type: string, retriable: boolean, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "KafkaProtocolError";
    this.type = type;
    this.retriable = retriable;
  }
}

interface PlatformaticError {
  readonly code?: unknown;
  readonly apiId?: unknown;
  readonly canRetry?: unknown;
  readonly message?: unknown;
  readonly errors?: unknown;
  readonly cause?: unknown;
}

/**
 * The first error of `error`'s tree that has `test`: a `MultipleErrors` holds others; with
 * `causes`, an error's `cause` is searched too (a connection's NetworkError holds the refused
 * authentication that failed it there).
 */
function findInTree(
  error: unknown,
  test: (e: PlatformaticError) => boolean,
  causes = false,
): PlatformaticError | undefined {
  const queue: unknown[] = [error];
  while (queue.length > 0) {
    const e = queue.shift() as PlatformaticError | undefined;
    if (e === undefined || e === null || typeof e !== "object") continue;
    if (test(e)) return e;
    if (Array.isArray(e.errors)) queue.push(...e.errors);
    if (causes && e.cause !== undefined) queue.push(e.cause);
  }
  return undefined;
}

/** `what` failed with `error`: rethrown in the port's terms. */
export function portError(what: string, error: unknown): Error {
  const refused = findInTree(
    error,
    (e) => e.code === "PLT_KFK_AUTHENTICATION" || e.apiId === "SASL_AUTHENTICATION_FAILED",
    true,
  );
  if (refused) {
    return new ConfigurationError("sasl", `${what}: the brokers refused the credentials (SASL authentication failed)`, {
      cause: error,
    });
  }
  const protocol = findInTree(error, (e) => typeof e.apiId === "string");
  if (protocol) {
    return new KafkaProtocolError(
      protocol.apiId as string,
      protocol.canRetry === true,
      `${what}: ${protocol.apiId} (${String(protocol.message)})`,
      { cause: error },
    );
  }
  const network = findInTree(error, (e) => e.code === "PLT_KFK_NETWORK" || e.code === "PLT_KFK_TIMEOUT");
  if (network) return new TransientError(`${what}: ${String(network.message)}`, { cause: error });
  return error instanceof Error ? error : new Error(`${what}: ${String(error)}`);
}

/** Runs `call`, rejecting in the port's terms. */
export async function inPortTerms<T>(what: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    throw portError(what, error);
  }
}
