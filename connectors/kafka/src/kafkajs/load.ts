/**
 * Loads and checks the kafkajs internals this connector needs (docs/design.md §4). kafkajs's
 * public API cannot (a) tell which producer id and epoch a transactional producer holds, (b)
 * commit a transaction another process pre-committed — its only way in is InitProducerId,
 * which aborts that transaction — or (c) list open transactions, and its read_committed
 * consumer lets records of interleaved aborted transactions through. So the connector builds
 * on kafkajs's private modules, and only the files of this folder touch them; the rest of the
 * connector calls the functions they export.
 *
 * kafkajs is pinned to exactly {@link PINNED_KAFKAJS_VERSION}; every internal used is checked
 * when this folder loads (a kafkajs of another shape fails when the connector loads, not
 * mid-run), and test/kafkajs-internals.test.ts proves the calls against a real broker. A
 * different kafkajs fails loudly, naming both versions.
 */
import { createRequire } from "node:module";
import { ExactlyError } from "@exactly/core";
import type { EosManager, InternalCluster, InternalDecoder, InternalEncoder } from "./shapes.ts";

export const PINNED_KAFKAJS_VERSION = "2.2.4";

/** kafkajs is not the version, or not the shape, this connector was written and tested against. */
export class KafkajsInternalsError extends ExactlyError {
  constructor(message: string) {
    super(
      "KAFKAJS_INTERNALS",
      `@exactly/kafka relies on kafkajs ${PINNED_KAFKAJS_VERSION} internals: ${message}. ` +
        `Pin kafkajs to exactly ${PINNED_KAFKAJS_VERSION}, or re-verify connectors/kafka/src/kafkajs/ against the new version.`,
    );
  }
}

type Fn = (...args: never[]) => unknown;

/** Resolves kafkajs's modules from this package, as `import "kafkajs"` does. */
export const kafkajsRequire = createRequire(import.meta.url);

/** The file of kafkajs's module `kafkajs/<path>`; a missing one is a kafkajs of another shape. */
export function resolveInternal(path: string): string {
  try {
    return kafkajsRequire.resolve(`kafkajs/${path}`);
  } catch (error) {
    throw new KafkajsInternalsError(`module kafkajs/${path} is missing (${(error as Error).message})`);
  }
}

export function requireInternal(path: string): unknown {
  try {
    return kafkajsRequire(`kafkajs/${path}`);
  } catch (error) {
    throw new KafkajsInternalsError(`module kafkajs/${path} is missing (${(error as Error).message})`);
  }
}

/** Checks that `value` has a function under each name; `what` names it in the error. */
export function expectFunctions(what: string, value: unknown, names: readonly string[]): void {
  for (const name of names) {
    const member = (value as Record<string, unknown> | undefined)?.[name];
    if (typeof member !== "function") throw new KafkajsInternalsError(`${what}.${name} is not a function`);
  }
}

export function expectFunction(what: string, value: unknown): Fn {
  if (typeof value !== "function") throw new KafkajsInternalsError(`${what} is not a function`);
  return value as Fn;
}

/** The internals shared by the files of this folder; the message producer is producers.ts's own. */
export interface Internals {
  createEosManager(options: {
    logger: unknown;
    cluster: InternalCluster;
    transactionTimeout: number;
    transactional: boolean;
    transactionalId: string;
  }): EosManager;
  createRetry(options: unknown): unknown;
  Encoder: new () => InternalEncoder;
  Decoder: new (buffer: Buffer) => InternalDecoder;
  createErrorFromCode(code: number): Error;
  COORDINATOR_TRANSACTION: number;
  READ_COMMITTED: number;
  CONNECTED: string;
}

function loadInternals(): Internals {
  // The version first: a kafkajs of another version fails naming it, not some missing module.
  const version = (requireInternal("package.json") as { version?: string }).version;
  if (version !== PINNED_KAFKAJS_VERSION) throw new KafkajsInternalsError(`found kafkajs ${version}`);
  const errors = requireInternal("src/protocol/error.js") as Record<string, unknown>;
  const coordinatorTypes = requireInternal("src/protocol/coordinatorTypes.js") as Record<string, unknown>;
  const isolation = requireInternal("src/protocol/isolationLevel.js") as Record<string, unknown>;
  const status = requireInternal("src/network/connectionStatus.js") as {
    CONNECTION_STATUS?: Record<string, unknown>;
  };
  const Encoder = expectFunction("src/protocol/encoder.js", requireInternal("src/protocol/encoder.js"));
  const Decoder = expectFunction("src/protocol/decoder.js", requireInternal("src/protocol/decoder.js"));
  expectFunctions("Encoder.prototype", Encoder.prototype, [
    "writeInt8",
    "writeInt64",
    "writeUVarInt",
    "writeUVarIntString",
    "writeBuffer",
  ]);
  expectFunctions("Decoder.prototype", Decoder.prototype, [
    "readInt16",
    "readInt32",
    "readInt64",
    "readUVarInt",
    "readUVarIntString",
    "readTaggedFields",
  ]);
  if (coordinatorTypes.TRANSACTION !== 1) throw new KafkajsInternalsError("coordinatorTypes.TRANSACTION is not 1");
  if (isolation.READ_COMMITTED !== 1) throw new KafkajsInternalsError("isolationLevel.READ_COMMITTED is not 1");
  const connected = status.CONNECTION_STATUS?.CONNECTED;
  if (typeof connected !== "string") throw new KafkajsInternalsError("CONNECTION_STATUS.CONNECTED is missing");
  return {
    createEosManager: expectFunction(
      "src/producer/eosManager",
      requireInternal("src/producer/eosManager/index.js"),
    ) as unknown as Internals["createEosManager"],
    createRetry: expectFunction(
      "src/retry",
      requireInternal("src/retry/index.js"),
    ) as unknown as Internals["createRetry"],
    Encoder: Encoder as unknown as Internals["Encoder"],
    Decoder: Decoder as unknown as Internals["Decoder"],
    createErrorFromCode: expectFunction(
      "protocol/error.js createErrorFromCode",
      errors.createErrorFromCode,
    ) as unknown as Internals["createErrorFromCode"],
    COORDINATOR_TRANSACTION: 1,
    READ_COMMITTED: 1,
    CONNECTED: connected,
  };
}

/** Loaded at import: a kafkajs of another shape fails when the connector loads, not mid-run. */
export const internals: Internals = loadInternals();
