import {
  type Batch,
  ConfigurationError,
  DeliveryGuarantee,
  FlushingSink,
  fencedSubtaskIndexes,
  RecordWriteError,
  type SinkCapabilities,
  type SinkContext,
  SinkNotOpenError,
} from "@exactly/core";
import { requirePositiveInteger } from "@exactly/core/internal";
import { maxBulkBytesOf } from "./bulk-limit.ts";
import { fencedError, raiseFences, UpsertFences } from "./fences.ts";
import { ioredisConnect } from "./ioredis/ioredis-connection.ts";
import { ReservedNames } from "./key-names.ts";
import { OperationEncoder, type RedisOperation } from "./operations.ts";
import type { RedisSinkCommonOptions } from "./options.ts";
import type { RedisConnect, RedisConnection, ScriptCall } from "./redis-connection.ts";
import { checkDurability } from "./startup-checks.ts";

export interface RedisAtLeastOnceSinkOptions<T> extends RedisSinkCommonOptions {
  /** The writes of one record, as for the write-ahead sink. */
  readonly operations: (record: T) => RedisOperation | readonly RedisOperation[];
  /** Operations buffered before they are sent as one pipeline; every barrier sends too. Default 1000. */
  readonly operationsPerFlush?: number;
}

/**
 * The at-least-once Redis sink: each record's operations go out as plain pipelined commands
 * as records arrive, and the barrier waits until the server has acknowledged all of them.
 * Nothing is logged and nothing guards a replay, so after a crash the operations since the
 * last checkpoint are applied again: counters count twice, lists grow twice. What it saves
 * is the write-ahead log and the Lua calls; use the write-ahead sink for exact results.
 *
 * In a sharded job the commands go through a script per slot that checks the slot's fence
 * first, as the upsert sink's writes do (`fences.ts`): an old owner's `SET` after its
 * successor's would leave the older value for good, which no replay puts right.
 */
export class RedisAtLeastOnceSink<T> extends FlushingSink<T> {
  readonly guarantee = DeliveryGuarantee.AT_LEAST_ONCE;
  override readonly capabilities: SinkCapabilities = { rescale: true, abortsLingering: false, fences: true };
  private readonly connect: RedisConnect;
  private readonly keyPrefix: string;
  private readonly operationsOf: (record: T) => RedisOperation | readonly RedisOperation[];
  private readonly operationsPerFlush: number;
  private readonly acceptLossy: boolean;
  private readonly encoder: OperationEncoder;
  private connection: RedisConnection | undefined;
  private buffered: (string | number)[][] = [];
  /** The pipeline on its way, if any; a failure is thrown by the next flush or barrier. */
  private inFlight: Promise<void> | undefined;
  /** In a sharded job: the fence hashes every call checks, and the owner's epoch (I9). */
  private fences: { readonly hashes: UpsertFences; readonly epoch: number; readonly subtask: number } | undefined;
  private sinkId = "";

  constructor(options: RedisAtLeastOnceSinkOptions<T>) {
    super();
    if (!options.keyPrefix) throw new ConfigurationError("keyPrefix", "is required and must not be empty");
    this.connect = ioredisConnect(options.connection);
    this.keyPrefix = options.keyPrefix;
    this.operationsOf = options.operations;
    this.operationsPerFlush = requirePositiveInteger("operationsPerFlush", options.operationsPerFlush ?? 1000);
    this.acceptLossy = options.acceptLossyDurability ?? false;
    this.encoder = new OperationEncoder(new ReservedNames(options.keyPrefix));
  }

  async open(context: SinkContext): Promise<void> {
    this.connection = await this.connect(`${context.sinkId}:${context.subtask}`);
    if (!this.acceptLossy) await checkDurability(this.connection, "acceptLossyDurability");
    this.encoder.maxBulkBytes = await maxBulkBytesOf(this.connection);
    this.sinkId = context.sinkId;
    const ownership = context.ownership;
    if (ownership) {
      // Before the first write: from now on an older owner's call under these indexes is refused.
      const hashes = new UpsertFences(this.connection, this.keyPrefix, context.sinkId);
      await raiseFences(
        this.connection,
        hashes.raiseCalls(fencedSubtaskIndexes(context), ownership.epoch),
        context.sinkId,
      );
      this.fences = { hashes, epoch: ownership.epoch, subtask: context.subtask };
    }
  }

  protected write(batch: Batch<T>): void | Promise<void> {
    const { values, positions } = batch;
    for (let i = 0; i < values.length; i++) {
      try {
        const produced = this.operationsOf(values[i] as T);
        for (const operation of Array.isArray(produced) ? produced : [produced as RedisOperation]) {
          const [command, key, ...args] = this.encoder.encode(operation);
          this.buffered.push([command, this.keyPrefix + key, ...args]);
        }
      } catch (error) {
        throw new RecordWriteError(positions[i], error);
      }
    }
    if (this.buffered.length >= this.operationsPerFlush) return this.send();
  }

  /** Waits for the pipeline before, then sends what is buffered and returns while it is on its way. */
  private async send(): Promise<void> {
    await this.settle();
    if (this.buffered.length === 0) return;
    if (!this.connection) throw new SinkNotOpenError("redis connection");
    const sending = this.fences
      ? this.sendFenced(this.connection, this.fences, this.buffered)
      : this.connection.runCommands(this.buffered);
    this.buffered = [];
    sending.catch(() => {});
    this.inFlight = sending;
  }

  /** The commands as one script call per slot, each checking the slot's fence first (I9). */
  private async sendFenced(
    connection: RedisConnection,
    fences: NonNullable<RedisAtLeastOnceSink<T>["fences"]>,
    commands: readonly (string | number)[][],
  ): Promise<void> {
    const calls = new Map<number | undefined, { keys: string[]; args: (string | number)[] }>();
    for (const [command, key, ...args] of commands) {
      const slot = connection.slotOf(String(key));
      let call = calls.get(slot);
      if (!call) {
        call = { keys: [fences.hashes.of(slot)], args: [fences.epoch, fences.subtask] };
        calls.set(slot, call);
      }
      call.keys.push(String(key));
      call.args.push(command as string, call.keys.length, args.length, ...args);
    }
    try {
      await connection.runScript("fencedCommands", [...calls.values()] as ScriptCall[]);
    } catch (error) {
      throw fencedError(error, this.sinkId) ?? error;
    }
  }

  private async settle(): Promise<void> {
    const sending = this.inFlight;
    this.inFlight = undefined;
    await sending;
  }

  /** The barrier: every command before it acknowledged. */
  protected async flush(_checkpointId: number): Promise<void> {
    await this.send();
    await this.settle();
  }

  async close(): Promise<void> {
    await this.settle().catch(() => {});
    await this.connection?.close();
    this.connection = undefined;
  }
}
