import {
  type CheckpointCommitter,
  ConfigurationError,
  fencedSubtaskIndexes,
  GenericWriteAheadSink,
  type LoggedRecords,
  RecordWriteError,
  ShardFencedError,
  type SinkCapabilities,
  type SinkContext,
  SinkNotOpenError,
} from "@exactly/core";
import { ownsSubtaskIndex, requirePositiveInteger } from "@exactly/core/internal";
import { ApplyCalls } from "./apply-calls.ts";
import { maxBulkBytesOf } from "./bulk-limit.ts";
import { fencedError, RESET_HINT, raiseFences } from "./fences.ts";
import { InFlight } from "./in-flight.ts";
import { ioredisConnect } from "./ioredis/ioredis-connection.ts";
import { globEscape, hashTag, MARKER_NAMESPACE, ReservedNames } from "./key-names.ts";
import {
  decodeLoggedOperations,
  encodeLoggedOperations,
  type LoggedOperations,
  operationCount,
  positionOf,
} from "./logged-operations.ts";
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
 * Sends of apply calls out at once: the server applies one while the next are read from the
 * log and encoded. They go in order on one connection, and each applies only right after the
 * one before it (the script refuses a gap).
 */
const SENDS_IN_FLIGHT = 16;

/** The error the apply script gives for a refused operation: `exactly: operation <index> of checkpoint …`. */
const REFUSED_OPERATION = /exactly: operation (\d+) of checkpoint/;

/** The error the apply script gives for a call that would leave a gap, and how often one is sent again. */
const GAP = /exactly: chunk from operation \d+ of checkpoint \d+ comes before/;
const GAP_ATTEMPTS = 3;

/**
 * The exactly-once Redis sink for writes that are not idempotent (INCRBY, HINCRBY, list
 * pushes, set adds, XADD), on {@link GenericWriteAheadSink}: a checkpoint's operations are
 * logged in checkpoint storage and, once the checkpoint completes, applied by Lua calls of
 * `operationsPerCall` each, sent as the log is read. Every call also advances the marker of
 * (sink, subtask) — the checkpoint and how many of its operations are in — in the same script,
 * so a checkpoint replayed after a crash, even one cut between two calls, applies none of its
 * operations twice.
 */
export class RedisWriteAheadSink<T> extends GenericWriteAheadSink<T, LoggedOperations> {
  override readonly capabilities: SinkCapabilities = { rescale: true, abortsLingering: true, fences: true };
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
      isCommitted: async (sinkId, subtask, checkpointId) =>
        (this as RedisWriteAheadSink<T>).isApplied(subtask, checkpointId, sinkId),
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
          return encodeLoggedOperations(position, operations);
        },
        decode: decodeLoggedOperations,
      },
    });
    this.encoder = encoder;
    this.connect = ioredisConnect(options.connection);
    this.keyPrefix = options.keyPrefix;
    this.configuredName = options.name;
    this.operationsPerCall = requirePositiveInteger("operationsPerCall", options.operationsPerCall ?? 1000);
    this.acceptLossy = options.acceptLossyDurability ?? false;
  }

  /**
   * A subtask's marker, under the sink's name (`sinkId`: the job's name of the sink when the
   * log was written, its former one for a log restored across a rename, I10).
   */
  private markerOf(subtask: number, sinkId?: string): string {
    const name = sinkId === undefined ? this.sinkName : (this.configuredName ?? sinkId);
    return `${this.keyPrefix}${MARKER_NAMESPACE}${name}:${subtask}`;
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

  private async isApplied(subtask: number, checkpointId: number, sinkId: string): Promise<boolean> {
    const marker = this.markerOf(subtask, sinkId);
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

  /** The checkpoint's operations in calls of `operationsPerCall`, each guarded by the marker. */
  protected override async sendAndCommit(
    logged: LoggedRecords<LoggedOperations>,
    checkpointId: number,
    subtask: number,
    sinkId: string,
  ): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await this.apply(logged, checkpointId, this.markerOf(subtask, sinkId));
        return;
      } catch (error) {
        // A call that reached the server before the one ahead of it is refused for the gap: the
        // client sends a call again after a NOSCRIPT (a restarted or flushed server), behind
        // calls sent meanwhile. Sent again from the start, the marker skips what is in.
        if (attempt < GAP_ATTEMPTS && GAP.test(error instanceof Error ? error.message : "")) continue;
        throw await this.applyError(error, logged);
      }
    }
  }

  /** Sends the calls as the log is read, a few sends out at once, and waits for every answer. */
  private async apply(logged: LoggedRecords<LoggedOperations>, checkpointId: number, marker: string): Promise<void> {
    const connection = this.open_;
    const calls = new ApplyCalls(marker, checkpointId, this.epoch, this.keyPrefix, this.operationsPerCall);
    const inFlight = new InFlight(SENDS_IN_FLIGHT);
    const ready: ScriptCall[] = [];
    try {
      for await (const records of logged) {
        for (const record of records) calls.add(record, ready);
        if (ready.length > 0) await inFlight.add(connection.runScript("applyChunk", ready.splice(0)));
      }
      calls.finish(ready);
      await inFlight.add(connection.runScript("applyChunk", ready.splice(0)));
      await inFlight.drain();
    } catch (error) {
      await inFlight.abandon();
      throw error;
    }
  }

  /** A fenced call as `ShardFencedError`; a refused operation as a `RecordWriteError` naming its record. */
  private async applyError(error: unknown, logged: LoggedRecords<LoggedOperations>): Promise<unknown> {
    const fenced = fencedError(error, this.sinkName);
    if (fenced) return fenced;
    const refused = REFUSED_OPERATION.exec(error instanceof Error ? error.message : "");
    if (!refused) return error;
    // The record holding the refused operation: the log is read again, only on this path.
    const at = Number(refused[1]);
    let operations = 0;
    for await (const records of logged) {
      for (const record of records) {
        operations += operationCount(record);
        if (operations > at) return new RecordWriteError(positionOf(record), error);
      }
    }
    return error;
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
