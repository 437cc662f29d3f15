/**
 * The Redis sinks' conformance definitions. The suite's child process loads this module for
 * `createSink`; the test process uses the definitions. Each scenario writes under a key
 * prefix of its own, so two scenarios never meet.
 */
import type {
  ConformanceDefinition,
  ConformanceRecord,
  HeldUpsert,
  ScenarioScope,
  SinkFactoryContext,
} from "@exactly/conformance";
import { DeliveryGuarantee } from "@exactly/core";
import { RedisAtLeastOnceSink, RedisUpsertSink, RedisWriteAheadSink } from "../../src/index.ts";
import { deleteUnder, keysUnder, type RedisTarget, readJson, withRedis } from "../helpers.ts";

interface RedisConformanceOptions {
  /** A single server's URL, or a Cluster. */
  readonly target: RedisTarget;
  readonly kind: "upsert" | "write-ahead" | "at-least-once";
}

/**
 * The upsert sink's keys spread over the slots of a Cluster; the write-ahead and at-least-once
 * sinks' carry the scenario's hash tag, as their calls need one slot (on a single server the
 * tag changes nothing).
 */
const prefixOf = (scope: ScenarioScope, kind: RedisConformanceOptions["kind"]) =>
  kind === "upsert" ? `c:${scope.id}:` : kind === "write-ahead" ? `{c:${scope.id}}:` : `{a:${scope.id}}:`;

/** The write-ahead and at-least-once sinks push each record's id onto one list: a duplicate would show. */
const idsKey = "ids";

export function createSink(context: SinkFactoryContext<RedisConformanceOptions>) {
  if (context.options.kind === "at-least-once") {
    return new RedisAtLeastOnceSink<ConformanceRecord>({
      connection: context.options.target,
      keyPrefix: prefixOf(context.scope, "at-least-once"),
      operations: (r) => ({ op: "rPush", key: idsKey, values: [r.id] }),
      // Small flushes, so kills land between several calls of one checkpoint.
      operationsPerFlush: 100,
    });
  }
  if (context.options.kind === "write-ahead") {
    return new RedisWriteAheadSink<ConformanceRecord>({
      connection: context.options.target,
      keyPrefix: prefixOf(context.scope, "write-ahead"),
      operations: (r) => ({ op: "rPush", key: idsKey, values: [r.id] }),
      // Small calls, so kills land between several calls of one checkpoint.
      operationsPerCall: 100,
    });
  }
  return new RedisUpsertSink<ConformanceRecord>({
    connection: context.options.target,
    keyPrefix: prefixOf(context.scope, "upsert"),
    key: (r) => r.key,
    version: (r) => r.version,
    value: { shape: "json" },
    // Small flushes, so kills land between several pipelines of one checkpoint.
    maxBufferedRecords: 200,
    writesPerCall: 50,
  });
}

async function readUpserts(target: RedisTarget, scope: ScenarioScope): Promise<HeldUpsert[]> {
  const prefix = prefixOf(scope, "upsert");
  return withRedis(target, async (client) => {
    const keys = (await keysUnder(client, prefix)).filter(
      (key) => key.startsWith(prefix) && !key.endsWith(":exactly-version"),
    );
    // Sent together, so the client pipelines them: one round trip a poll, not one a key.
    const reads = await Promise.all(keys.map((key) => readJson<ConformanceRecord>(client, key)));
    const held: HeldUpsert[] = [];
    reads.forEach((read, i) => {
      if (read) held.push({ key: (keys[i] as string).slice(prefix.length), id: read.value.id, version: read.version });
    });
    return held;
  });
}

/** Names the definitions by where they run. */
const where = (target: RedisTarget) => (typeof target === "string" ? "" : " on a Cluster");

export function redisUpsertDefinition(target: RedisTarget): ConformanceDefinition<RedisConformanceOptions> {
  return {
    name: `redis upsert sink${where(target)}`,
    sinkModule: new URL(import.meta.url),
    sinkOptions: { target, kind: "upsert" },
    guarantee: DeliveryGuarantee.EXACTLY_ONCE,
    lifecycle: "idempotent",
    capabilities: { rescale: true, upserts: true },
    teardown: (scope) => deleteUnder(target, prefixOf(scope, "upsert")),
    readUpserts: (scope) => readUpserts(target, scope),
  };
}

export function redisWriteAheadDefinition(target: RedisTarget): ConformanceDefinition<RedisConformanceOptions> {
  return {
    name: `redis write-ahead sink${where(target)}`,
    sinkModule: new URL(import.meta.url),
    sinkOptions: { target, kind: "write-ahead" },
    guarantee: DeliveryGuarantee.EXACTLY_ONCE,
    lifecycle: "write-ahead",
    capabilities: { rescale: true, abortsLingering: true },
    teardown: (scope) => deleteUnder(target, prefixOf(scope, "write-ahead")),
    readCommitted: (scope) =>
      withRedis(target, async (client) =>
        (await client.lrange(`${prefixOf(scope, "write-ahead")}${idsKey}`, 0, -1)).map(Number),
      ),
  };
}

export function redisAtLeastOnceDefinition(target: RedisTarget): ConformanceDefinition<RedisConformanceOptions> {
  return {
    name: `redis at-least-once sink${where(target)}`,
    sinkModule: new URL(import.meta.url),
    sinkOptions: { target, kind: "at-least-once" },
    guarantee: DeliveryGuarantee.AT_LEAST_ONCE,
    lifecycle: "flush",
    teardown: (scope) => deleteUnder(target, prefixOf(scope, "at-least-once")),
    readCommitted: (scope) =>
      withRedis(target, async (client) =>
        (await client.lrange(`${prefixOf(scope, "at-least-once")}${idsKey}`, 0, -1)).map(Number),
      ),
  };
}
