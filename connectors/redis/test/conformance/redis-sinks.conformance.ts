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
import { RedisUpsertSink, RedisWriteAheadSink } from "../../src/index.ts";
import { deleteUnder, keysUnder, readJson, withRedis } from "../helpers.ts";

interface RedisConformanceOptions {
  readonly url: string;
  readonly kind: "upsert" | "write-ahead";
}

const prefixOf = (scope: ScenarioScope) => `c:${scope.id}:`;

/** The write-ahead sink pushes each record's id onto one list: a duplicate would show. */
const idsKey = "ids";

export function createSink(context: SinkFactoryContext<RedisConformanceOptions>) {
  if (context.options.kind === "write-ahead") {
    return new RedisWriteAheadSink<ConformanceRecord>({
      connection: context.options.url,
      keyPrefix: prefixOf(context.scope),
      operations: (r) => ({ op: "rPush", key: idsKey, values: [r.id] }),
      // Small calls, so kills land between several calls of one checkpoint.
      operationsPerCall: 100,
    });
  }
  return new RedisUpsertSink<ConformanceRecord>({
    connection: context.options.url,
    keyPrefix: prefixOf(context.scope),
    key: (r) => r.key,
    version: (r) => r.version,
    value: { shape: "json" },
    // Small flushes, so kills land between several pipelines of one checkpoint.
    maxBufferedRecords: 200,
    writesPerCall: 50,
  });
}

async function readUpserts(url: string, scope: ScenarioScope): Promise<HeldUpsert[]> {
  const prefix = prefixOf(scope);
  return withRedis(url, async (client) => {
    const held: HeldUpsert[] = [];
    for (const key of await keysUnder(client, prefix)) {
      if (!key.startsWith(prefix) || key.endsWith(":exactly-version")) continue;
      const read = await readJson<ConformanceRecord>(client, key);
      if (read) held.push({ key: key.slice(prefix.length), id: read.value.id, version: read.version });
    }
    return held;
  });
}

export function redisUpsertDefinition(url: string): ConformanceDefinition<RedisConformanceOptions> {
  return {
    name: "redis upsert sink",
    sinkModule: new URL(import.meta.url),
    sinkOptions: { url, kind: "upsert" },
    guarantee: DeliveryGuarantee.EXACTLY_ONCE,
    lifecycle: "idempotent",
    capabilities: { rescale: true, upserts: true },
    teardown: (scope) => deleteUnder(url, prefixOf(scope)),
    readUpserts: (scope) => readUpserts(url, scope),
  };
}

export function redisWriteAheadDefinition(url: string): ConformanceDefinition<RedisConformanceOptions> {
  return {
    name: "redis write-ahead sink",
    sinkModule: new URL(import.meta.url),
    sinkOptions: { url, kind: "write-ahead" },
    guarantee: DeliveryGuarantee.EXACTLY_ONCE,
    lifecycle: "write-ahead",
    capabilities: { rescale: true, abortsLingering: true },
    teardown: (scope) => deleteUnder(url, prefixOf(scope)),
    readCommitted: (scope) =>
      withRedis(url, async (client) => (await client.lrange(`${prefixOf(scope)}${idsKey}`, 0, -1)).map(Number)),
  };
}
