import {
  ConfigurationError,
  fencedSubtaskIndexes,
  IdempotentSink,
  type RecordPosition,
  RecordWriteError,
  type SinkCapabilities,
  type SinkContext,
  SinkNotOpenError,
  type Upsert,
} from "@exactly/core";
import { requirePositiveInteger } from "@exactly/core/internal";
import { checkBulkLength, DEFAULT_MAX_BULK_BYTES, maxBulkBytesOf } from "./bulk-limit.ts";
import { fencedError, raiseFences, UpsertFences } from "./fences.ts";
import { InFlight } from "./in-flight.ts";
import { ioredisConnect } from "./ioredis/ioredis-connection.ts";
import { ReservedNames, sharesVersionKeyWith, versionKeyOf } from "./key-names.ts";
import type { RedisSinkCommonOptions } from "./options.ts";
import type { RedisConnect, RedisConnection, ScriptCall } from "./redis-connection.ts";
import { checkDurability } from "./startup-checks.ts";
import { hasUtf8Form, NO_UTF8_FORM } from "./strings.ts";
import { type CompiledShape, compileShape, type ValueShape } from "./value-shapes.ts";

export interface RedisUpsertSinkOptions<T> extends RedisSinkCommonOptions {
  /** Every key starts with it (non-empty): `<keyPrefix><key(record)>`. */
  readonly keyPrefix: string;
  /** The record's key, after the prefix. */
  readonly key: (record: T) => string;
  /**
   * The write's version: the same under replay, and increasing along a key's records, so the
   * stored value never moves back. A number exact in a double (|v| ≤ 2^53): an event's own
   * sequence or timestamp, or `sourceOffsetVersion` when each key's records come from one
   * source split. Not checkpoint id + sequence: a replay's checkpoints need not end where
   * the crashed run's did, so the same record could get a version above a later one's.
   */
  readonly version: (record: T, position: RecordPosition) => number;
  readonly value: ValueShape<T>;
  /** Expire each key (and its version) this long after its last applied write; default never. */
  readonly ttlMs?: number;
  /** Records buffered before they are sent; every barrier sends too. Default 1000. */
  readonly maxBufferedRecords?: number;
  /** Writes per script call (a flush's calls go out pipelined). Default 500. */
  readonly writesPerCall?: number;
}

/**
 * Flushes sent and not yet answered before the next flush waits: the server applies one while
 * the records of the next are buffered, and a barrier waits for them all.
 */
const FLUSHES_IN_FLIGHT = 8;

/** The version of a record from its source offset: right when each key's records all come from one split (a Kafka partition). */
export function sourceOffsetVersion(_record: unknown, position: RecordPosition): number {
  const offset = typeof position.offset === "number" ? position.offset : Number(position.offset);
  if (!Number.isSafeInteger(offset)) throw new Error(`offset ${position.offset} is not an integer below 2^53`);
  return offset;
}

/**
 * The exactly-once Redis sink for keyed values, on {@link IdempotentSink}: writes go out as
 * records arrive (buffered, pipelined) and are flushed at the barrier; each carries a
 * version, and a Lua script applies it only if it is newer than the version stored beside
 * the key. A replay after a crash rewrites what it wrote before, in order, and never shows
 * a key an older value than it held ("no jump back"). The version lives in a key of its own
 * next to the data key (see `key-names.ts`); it costs one small string key per data key.
 */
export class RedisUpsertSink<T> extends IdempotentSink<T> {
  // Sharded, every script checks the subtask's fence (fences.ts, I9).
  override readonly capabilities: SinkCapabilities = { rescale: true, upserts: true, fences: true };
  private readonly connect: RedisConnect;
  private readonly keyPrefix: string;
  private readonly keyOfRecord: (record: T) => string;
  private readonly versionOfRecord: (record: T, position: RecordPosition) => number;
  private readonly shape: CompiledShape<T>;
  private readonly ttlMs: number;
  private readonly writesPerCall: number;
  private readonly acceptLossy: boolean;
  private readonly reservedNames: ReservedNames;
  /** Whether a key under the prefix can start with "{", and so share another key's version key. */
  private readonly braced: boolean;
  /** The server's `proto-max-bulk-len`, read at open. */
  private maxBulkBytes = DEFAULT_MAX_BULK_BYTES;
  private connection: RedisConnection | undefined;
  /** Flushes sent and not yet answered; the barrier waits for them. */
  private readonly inFlight = new InFlight(FLUSHES_IN_FLIGHT);
  /** In a sharded job: the fence hashes every call checks, and the owner's epoch (I9). */
  private fences: { readonly hashes: UpsertFences; readonly epoch: number; readonly subtask: number } | undefined;

  constructor(options: RedisUpsertSinkOptions<T>) {
    super(options.maxBufferedRecords === undefined ? {} : { maxBufferedRecords: options.maxBufferedRecords });
    if (!options.keyPrefix) throw new ConfigurationError("keyPrefix", "is required and must not be empty");
    this.connect = ioredisConnect(options.connection);
    // Under a prefix of only "{", the keys "{a" (no hash tag) and "{{a}" (tag "{a") would share
    // the version key "{{a}:exactly-version"; under any other prefix, version keys are one per key.
    if (/^\{+$/.test(options.keyPrefix))
      throw new ConfigurationError(
        "keyPrefix",
        `"${options.keyPrefix}" (only "{") would give two keys one version key`,
      );
    this.reservedNames = new ReservedNames(options.keyPrefix);
    this.braced = options.keyPrefix.startsWith("{");
    this.keyPrefix = options.keyPrefix;
    this.keyOfRecord = options.key;
    this.versionOfRecord = options.version;
    this.shape = compileShape(options.value);
    this.ttlMs = options.ttlMs === undefined ? 0 : requirePositiveInteger("ttlMs", options.ttlMs);
    this.writesPerCall = requirePositiveInteger("writesPerCall", options.writesPerCall ?? 500);
    this.acceptLossy = options.acceptLossyDurability ?? false;
  }

  override async open(context: SinkContext): Promise<void> {
    await super.open(context);
    this.connection = await this.connect(`${context.sinkId}:${context.subtask}`);
    if (!this.acceptLossy) await checkDurability(this.connection, "acceptLossyDurability");
    this.maxBulkBytes = await maxBulkBytesOf(this.connection);
    const ownership = context.ownership;
    if (ownership) {
      // Before the first write: from now on an older owner's call under these indexes is refused.
      const hashes = new UpsertFences(this.connection, this.keyPrefix, context.sinkId);
      const indexes = fencedSubtaskIndexes(context);
      await raiseFences(this.connection, hashes.raiseCalls(indexes, ownership.epoch), context.sinkId);
      this.fences = { hashes, epoch: ownership.epoch, subtask: context.subtask };
    }
  }

  protected keyOf(record: T): string {
    return this.keyOfRecord(record);
  }

  protected versionOf(record: T, position: RecordPosition): number {
    let version: number;
    try {
      version = this.versionOfRecord(record, position);
    } catch (error) {
      throw new RecordWriteError(position, error);
    }
    if (typeof version !== "number" || !Number.isFinite(version) || Math.abs(version) > Number.MAX_SAFE_INTEGER) {
      throw new RecordWriteError(position, new Error(`version ${String(version)} is not a number exact in a double`));
    }
    return version;
  }

  protected async upsert(writes: readonly Upsert<T>[]): Promise<void> {
    if (!this.connection) throw new SinkNotOpenError("redis connection");
    // One write per key per flush: the newest (a key's records arrive in version order).
    const latest = new Map<string, Upsert<T>>();
    for (const write of writes) {
      if (typeof write.key !== "string" || write.key.length === 0)
        throw new RecordWriteError(write.position, new Error("the record's key is empty"));
      if (!hasUtf8Form(write.key)) throw new RecordWriteError(write.position, new Error(`the key ${NO_UTF8_FORM}`));
      // A version key (or another sink's marker) is no record's key: checked before anything is sent.
      const reserved = this.reservedNames.check(write.key);
      if (reserved !== undefined) throw new RecordWriteError(write.position, new Error(reserved));
      if (this.braced) this.refuseSharedVersionKey(write);
      const seen = latest.get(write.key);
      if (!seen || write.version >= seen.version) latest.set(write.key, write);
    }
    // A call's keys must share a slot on a Cluster (a key and its version key always do):
    // there, one call per slot; on a single server, any keys together.
    const connection = this.connection;
    const fences = this.fences;
    const calls: ScriptCall[] = [];
    const open = new Map<number | undefined, { keys: string[]; args: (string | number)[] }>();
    for (const write of latest.values()) {
      let value: (string | number)[];
      try {
        value = this.shape.encode(write.record);
        for (const argument of value) checkBulkLength(argument, this.maxBulkBytes, "the value");
      } catch (error) {
        throw new RecordWriteError(write.position, error);
      }
      const key = this.keyPrefix + write.key;
      const slot = connection.slotOf(key);
      let call = open.get(slot);
      if (!call) {
        // Sharded: the call's first key is the fence hash of its slot (I9); else no fence at all.
        call = fences
          ? { keys: [fences.hashes.of(slot)], args: [this.shape.script, this.ttlMs, fences.epoch, fences.subtask] }
          : { keys: [], args: [this.shape.script, this.ttlMs, 0, ""] };
        open.set(slot, call);
      }
      call.keys.push(key, versionKeyOf(key));
      call.args.push(write.version, value.length, ...value);
      if (Math.floor(call.keys.length / 2) >= this.writesPerCall) {
        calls.push(call);
        open.delete(slot);
      }
    }
    calls.push(...open.values());
    const sinkId = this.context.sinkId;
    const sent = connection.runScript("guardedUpsert", calls).catch((error: unknown) => {
      throw fencedError(error, sinkId) ?? error;
    });
    // Waits only while too many flushes are out; throws the first one refused.
    await this.inFlight.add(sent);
  }

  /**
   * Refuses a key whose version key is another key's: that key's later writes would be
   * compared with this record's version (a sink under "p:" and one under "{p:", see `key-names.ts`).
   */
  private refuseSharedVersionKey(write: Upsert<T>): void {
    const key = this.keyPrefix + write.key;
    const other = sharesVersionKeyWith(key);
    if (other === undefined) return;
    throw new RecordWriteError(
      write.position,
      new Error(
        `key ${JSON.stringify(key)} would share its version key ${JSON.stringify(versionKeyOf(key))} with the key ${JSON.stringify(other)}, which a sink under a prefix without the leading "{" writes`,
      ),
    );
  }

  override async snapshotState(checkpointId: number): Promise<Record<string, never>> {
    const state = await super.snapshotState(checkpointId);
    // The checkpoint holds only writes the server has taken.
    await this.inFlight.drain();
    return state;
  }

  override async close(): Promise<void> {
    await super.close();
    // Unanswered writes belong to no checkpoint, as unflushed ones (the replay rewrites them).
    await this.inFlight.abandon();
    await this.connection?.close();
    this.connection = undefined;
  }
}
