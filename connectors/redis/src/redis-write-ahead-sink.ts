import {
  type CheckpointCommitter,
  ConfigurationError,
  fencedSubtaskIndexes,
  GenericWriteAheadSink,
  type LoggedRecords,
  ownsSubtaskIndex,
  type RecordPosition,
  RecordWriteError,
  requirePositiveInteger,
  ShardFencedError,
  type SinkCapabilities,
  type SinkContext,
  SinkNotOpenError,
} from "@exactly/core";
import { maxBulkBytesOf } from "./bulk-limit.ts";
import { fencedError, RESET_HINT, raiseFences } from "./fences.ts";
import { ioredisConnect } from "./ioredis/ioredis-connection.ts";
import { globEscape, hashTag, MARKER_NAMESPACE, ReservedNames } from "./key-names.ts";
import { type EncodedOperation, OperationEncoder, type RedisOperation } from "./operations.ts";
import type { RedisSinkCommonOptions } from "./options.ts";
import type { RedisConnect, RedisConnection, ScriptCall } from "./redis-connection.ts";
import { checkDurability } from "./startup-checks.ts";

export interface RedisWriteAheadSinkOptions<T> extends RedisSinkCommonOptions {
  /** Every key starts with it (non-empty): the operations' keys and the sink's markers. */
  readonly keyPrefix: string;
  /** The writes of one record. */
  readonly operations: (record: T) => RedisOperation | readonly RedisOperation[];
  /**
   * The sink's name in Redis, in its markers' keys (`<keyPrefix>exactly-wal:<name>:<subtask>`).
   * Default: the sink's name in the job. Two sinks under one prefix need two names.
   */
  readonly name?: string;
  /** Operations per Lua call; a checkpoint goes in calls of this many, each applied once. Default 1000. */
  readonly operationsPerCall?: number;
}

/**
 * A record as the log holds it: its source position (so an operation the server refuses at
 * commit names its record) and its operations, encoded.
 */
interface LoggedOperations {
  readonly position: RecordPosition;
  readonly operations: EncodedOperation[];
}

/** The error the apply script gives for a refused operation: `exactly: operation <index> of checkpoint …`. */
const REFUSED_OPERATION = /exactly: operation (\d+) of checkpoint/;

/** Calls of a checkpoint sent in one pipeline, and pipelines on their way at once while the log is read on. */
const CALLS_PER_PIPELINE = 8;
const PIPELINES_IN_FLIGHT = 4;

/** The source position of the record whose operations hold the checkpoint's `operation`-th (from 0). */
async function positionOfOperation(
  logged: LoggedRecords<LoggedOperations>,
  operation: number,
): Promise<RecordPosition | undefined> {
  let first = 0;
  for await (const records of logged) {
    for (const record of records) {
      first += record.operations.length;
      if (operation < first) return record.position;
    }
  }
  return undefined;
}

/**
 * The exactly-once Redis sink for writes that are not idempotent (INCRBY, HINCRBY, list
 * pushes, set adds, XADD), on {@link GenericWriteAheadSink}: a checkpoint's operations are
 * logged in checkpoint storage and, once the checkpoint completes, applied by Lua calls of
 * `operationsPerCall` each. Every call also advances the marker of (sink, subtask) — the
 * checkpoint and how many of its operations are in — in the same script, so a checkpoint
 * replayed after a crash, even one cut between two calls, applies none of its operations twice.
 */
export class RedisWriteAheadSink<T> extends GenericWriteAheadSink<T, LoggedOperations> {
  override readonly capabilities: SinkCapabilities = { rescale: true, abortsLingering: true };
  private readonly connect: RedisConnect;
  private readonly keyPrefix: string;
  private readonly configuredName: string | undefined;
  private readonly operationsPerCall: number;
  private readonly acceptLossy: boolean;
  private readonly encoder: OperationEncoder;
  private sinkName = "";
  private connection: RedisConnection | undefined;
  /** In a sharded job, the owner's epoch every call checks against the marker's fence (I9); 0 otherwise. */
  private epoch = 0;

  constructor(options: RedisWriteAheadSinkOptions<T>) {
    if (!options.keyPrefix) throw new ConfigurationError("keyPrefix", "is required and must not be empty");
    // Checks each operation at the write, so a bad one fails before its checkpoint is logged.
    const encoder = new OperationEncoder(new ReservedNames(options.keyPrefix));
    const operationsOf = options.operations;
    const committer: CheckpointCommitter = {
      isCommitted: async (_sinkId, subtask, checkpointId) =>
        (this as RedisWriteAheadSink<T>).isApplied(subtask, checkpointId),
      // The last chunk's call marks the checkpoint done, in the same script as its operations.
      commit: async () => {},
    };
    super({
      committer,
      codec: {
        encode: (record, position) => {
          const produced = operationsOf(record);
          const list = Array.isArray(produced) ? produced : [produced as RedisOperation];
          const operations = new Array<EncodedOperation>(list.length);
          for (let i = 0; i < list.length; i++) operations[i] = encoder.encode(list[i] as RedisOperation);
          const logged: LoggedOperations = { position, operations };
          return JSON.stringify(logged);
        },
        decode: (line) => JSON.parse(line) as LoggedOperations,
      },
    });
    this.encoder = encoder;
    this.connect = ioredisConnect(options.connection);
    this.keyPrefix = options.keyPrefix;
    this.configuredName = options.name;
    this.operationsPerCall = requirePositiveInteger("operationsPerCall", options.operationsPerCall ?? 1000);
    this.acceptLossy = options.acceptLossyDurability ?? false;
  }

  private markerOf(subtask: number): string {
    return `${this.keyPrefix}${MARKER_NAMESPACE}${this.sinkName}:${subtask}`;
  }

  private get open_(): RedisConnection {
    if (!this.connection) throw new SinkNotOpenError("redis connection");
    return this.connection;
  }

  override async open(context: SinkContext): Promise<void> {
    this.sinkName = this.configuredName ?? context.sinkId;
    this.connection = await this.connect(`${this.sinkName}:${context.subtask}`);
    if (this.connection.clustered && hashTag(this.keyPrefix) === undefined) {
      // Each call applies operations and advances the marker in one script: on a Cluster all
      // those keys must be in one slot, which only a hash tag in the prefix guarantees.
      await this.connection.close();
      this.connection = undefined;
      throw new ConfigurationError(
        "keyPrefix",
        `"${this.keyPrefix}" has no hash tag, so on a Redis Cluster the keys of one call would cross slots; give it one, e.g. "{${this.keyPrefix.replace(/[:{}]+$/, "")}}:"`,
      );
    }
    if (!this.acceptLossy) await checkDurability(this.connection, "acceptLossyDurability");
    this.encoder.maxBulkBytes = await maxBulkBytesOf(this.connection);
    this.epoch = context.ownership?.epoch ?? 0;
    // The fences of every index this subtask restores or cleans up: fields of their markers.
    const fences: ScriptCall | undefined = context.ownership && {
      keys: fencedSubtaskIndexes(context).map((index) => this.markerOf(index)),
      args: [this.epoch, ...fencedSubtaskIndexes(context).map(() => "fence")],
    };
    // Before recovery touches anything: an owner older than the newest forgets nothing.
    if (fences) await this.assertCurrent(fences.keys);
    if (context.restoredCheckpointId === undefined) {
      // A fresh start numbers checkpoints from 1 again: an earlier run's markers would skip them.
      const forgotten = await this.forgetMarkers((index) =>
        ownsSubtaskIndex(context.subtask, context.parallelism, index),
      );
      if (forgotten > 0) {
        context.logger.info(`fresh start: forgot the markers of ${forgotten} subtask(s) of an earlier run`, {
          sink: this.sinkName,
          subtask: context.subtask,
        });
      }
    }
    await super.open(context);
    // Restored logs are applied and the lingering ones dropped: from now on an older owner's
    // call under these indexes is refused (I9). A call of it runs wholly before or not at all.
    if (fences) await raiseFences(this.open_, [fences], this.sinkName);
  }

  /** Refuses to go on if a newer owner raised the fence of any of these markers. */
  private async assertCurrent(markers: readonly string[]): Promise<void> {
    for (const marker of markers) {
      const [fence] = await this.open_.hashFields(marker, ["fence"]);
      if (Number(fence ?? 0) > this.epoch) throw this.fenced(marker, fence);
    }
  }

  private fenced(marker: string, fence: string | null | undefined): ShardFencedError {
    return new ShardFencedError(
      this.epoch,
      `sink ${this.sinkName}: a newer owner (epoch ${fence}) raised the fence of ${marker}; nothing this owner writes may become visible${RESET_HINT}`,
    );
  }

  private async forgetMarkers(owns: (subtask: number) => boolean): Promise<number> {
    const prefix = `${this.keyPrefix}${MARKER_NAMESPACE}${this.sinkName}:`;
    // Escaped: a prefix with glob characters ("pro?:") would match another sink's markers.
    const found = await this.open_.scanKeys(`${globEscape(prefix)}*`);
    const owned = found.filter((key) => {
      if (!key.startsWith(prefix)) return false;
      const index = key.slice(prefix.length);
      return /^\d+$/.test(index) && owns(Number(index));
    });
    if (owned.length === 0) return 0;
    if (this.epoch === 0) await this.open_.deleteKeys(owned);
    else {
      // Sharded: only if no newer owner raised a fence meanwhile, checked in the same script (I9).
      try {
        await this.open_.runScript("forgetMarkers", [{ keys: owned, args: [this.epoch] }]);
      } catch (error) {
        throw fencedError(error, this.sinkName) ?? error;
      }
    }
    return owned.length;
  }

  private async isApplied(subtask: number, checkpointId: number): Promise<boolean> {
    const marker = this.markerOf(subtask);
    const [checkpoint, done, fence] = await this.open_.hashFields(marker, ["checkpoint", "done", "fence"]);
    // Fenced already: refused before the log is read (a successor may have dropped it). The
    // script checks again, atomically with its writes.
    if (this.epoch > 0 && Number(fence ?? 0) > this.epoch) throw this.fenced(marker, fence);
    const applied = Number(checkpoint ?? 0);
    return applied > checkpointId || (applied === checkpointId && done === "1");
  }

  protected async sendValues(): Promise<void> {
    throw new Error("RedisWriteAheadSink applies a checkpoint in sendAndCommit");
  }

  /**
   * The checkpoint's operations in calls of `operationsPerCall`, each guarded by the marker,
   * read from the log as they are sent: a few pipelines of calls on their way at a time, never
   * the whole checkpoint decoded at once.
   */
  protected override async sendAndCommit(
    logged: LoggedRecords<LoggedOperations>,
    checkpointId: number,
    subtask: number,
  ): Promise<void> {
    const marker = this.markerOf(subtask);
    const perCall = this.operationsPerCall;
    const inFlight: Promise<unknown>[] = [];
    let calls: ScriptCall[] = [];
    // A call is known to be the last one only once the log has no operation after it.
    let chunk: EncodedOperation[] = [];
    let first = 0;
    const send = async (): Promise<void> => {
      // One connection, so calls apply in the order sent; a call after a refused one is refused too
      // (the script refuses a gap), and the first failure is the one awaited first.
      const sending = this.open_.runScript("applyChunk", calls);
      sending.catch(() => {});
      inFlight.push(sending);
      calls = [];
      if (inFlight.length >= PIPELINES_IN_FLIGHT) await inFlight.shift();
    };
    try {
      for await (const records of logged) {
        for (const record of records) {
          for (const operation of record.operations) {
            if (chunk.length === perCall) {
              calls.push(this.applyCall(marker, checkpointId, first, false, chunk));
              first += chunk.length;
              chunk = [];
              if (calls.length === CALLS_PER_PIPELINE) await send();
            }
            chunk.push(operation);
          }
        }
      }
      // The last call marks the checkpoint done; a checkpoint without operations still makes one.
      calls.push(this.applyCall(marker, checkpointId, first, true, chunk));
      await send();
      while (inFlight.length > 0) await inFlight.shift();
    } catch (error) {
      const fenced = fencedError(error, this.sinkName);
      if (fenced) throw fenced;
      const refused = REFUSED_OPERATION.exec(error instanceof Error ? error.message : "");
      if (!refused) throw error;
      // The log is read again, only now, for the record whose operations hold the refused one.
      const position = await positionOfOperation(logged, Number(refused[1]));
      if (position === undefined) throw error;
      throw new RecordWriteError(position, error);
    }
  }

  /** One script call: operations `first`… of the checkpoint, and the marker's advance past them. */
  private applyCall(
    marker: string,
    checkpointId: number,
    first: number,
    last: boolean,
    chunk: readonly EncodedOperation[],
  ): ScriptCall {
    const keys = [marker];
    const keyIndex = new Map<string, number>();
    const args: (string | number)[] = [checkpointId, first, last ? 1 : 0, chunk.length, this.epoch];
    for (const [command, key, ...rest] of chunk) {
      const full = this.keyPrefix + key;
      let index = keyIndex.get(full);
      if (index === undefined) {
        keys.push(full);
        index = keys.length;
        keyIndex.set(full, index);
      }
      args.push(command, index, rest.length, ...rest);
    }
    return { keys, args };
  }

  override async close(): Promise<void> {
    try {
      await super.close();
    } finally {
      await this.connection?.close();
      this.connection = undefined;
    }
  }
}
