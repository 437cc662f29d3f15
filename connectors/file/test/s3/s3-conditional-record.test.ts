// S3ConditionalRecord on both S3 implementations the services provide (MinIO and moto both
// honour If-Match and If-None-Match on PutObject; the suite's races show it), its keys kept
// inside their folder, and its refusal of a server that ignores the conditions.
import { GetObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { ConfigurationError } from "@exactly/core";
import { conditionalRecordSuite } from "@exactly/testkit/conditional-record-suite";
import { type S3Config, s3Config, s3MotoConfig } from "@exactly/testkit/endpoints";
import { startTcpProxy } from "@exactly/testkit/tcp-proxy";
import { beforeAll, describe, expect, it } from "vitest";
import { S3ConditionalRecord } from "../../src/s3/index.ts";
import { listKeys, s3Client, testBucket } from "./helpers.ts";

for (const [server, config] of [
  ["MinIO", s3Config],
  ["moto", s3MotoConfig],
] as const) {
  describe(`S3ConditionalRecord on ${server}`, () => {
    const { bucket, s3 } = testBucket("records", config);
    beforeAll(async () => void (await s3()));

    conditionalRecordSuite(`S3 (${server})`, (location) =>
      record(bucket, `records/${location}`, { connection: config() }),
    );

    it("keeps its key inside its folder: climbing or empty segments are refused, odd characters are a key", async () => {
      for (const key of ["", "/lease", "a/../lease", "a/./lease", "a//lease", "lease/", "..", "a\\lease", "a\0lease"]) {
        expect(() => record(bucket, key, { connection: config() }), JSON.stringify(key)).toThrow(ConfigurationError);
      }
      const key = "records/odd name %2F?#&'\"ü";
      const odd = record(bucket, key, { connection: config() });
      const version = await odd.replace(undefined, { epoch: 1 });
      expect(await odd.read()).toEqual({ value: { epoch: 1 }, version });
      expect(await listKeys(await s3(), bucket, "records/odd")).toEqual([key]);
      await odd.close();
    });

    it("leaves a client it was given open, and no probe object behind", async () => {
      const client = s3Client(config());
      const given = record(bucket, "given/lease", { client });
      expect(await given.replace(undefined, { epoch: 1 })).toBeDefined();
      await given.close();
      expect(await listKeys(client, bucket, "given/")).toEqual(["given/lease"]);
      client.destroy();
    });

    it("wins a PUT the client sent twice (its first answer lost) and still refuses a stale version", async () => {
      const client = s3Client(config());
      sendPutsTwice(client);
      const twice = record(bucket, "retried/lease", { client });
      const first = await twice.replace(undefined, { epoch: 1 });
      expect(first).toBeDefined();
      const second = await twice.replace(first, { epoch: 2 });
      expect(second).toBeDefined();
      expect(await twice.read()).toEqual({ value: { epoch: 2 }, version: second });
      expect(await twice.replace(first, { epoch: 3 })).toBeUndefined();
      client.destroy();
    });

    // MinIO only: through the delaying proxy every attempt to moto is reset before it is
    // forwarded, so no PUT would reach it; the double-send test above covers moto.
    if (server === "MinIO")
      it("wins a PUT whose answer a cut connection lost, when the SDK's retry meets its own write", async () => {
        const target = new URL(config().endpoint);
        const proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 80) });
        const client = s3Client({ ...config(), endpoint: `http://127.0.0.1:${proxy.port}` });
        const statuses = putStatuses(client);
        const cut = record(bucket, "cut/lease", { client });
        try {
          const first = await cut.replace(undefined, { epoch: 1 });
          // The answer is held back longer than the proxy waits before it cuts the connection.
          proxy.setLatency(200);
          const lost = proxy.cutAfterRequest('{"value":{"epoch":2}');
          statuses.length = 0;
          const second = await cut.replace(first, { epoch: 2 });
          await lost;
          expect(statuses).toContain(412);
          expect(second).toBeDefined();
          expect(await cut.read()).toEqual({ value: { epoch: 2 }, version: second });
        } finally {
          client.destroy();
          await proxy.close();
        }
      });

    it("refuses a server that ignores the conditions, naming its endpoint, and overwrites nothing", async () => {
      const client = s3Client(config());
      const key = "ignored/lease";
      await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: "someone else's" }));
      stripConditions(client);
      const blind = record(bucket, key, { client });
      const refusal = blind.replace(undefined, { epoch: 1 });
      await expect(refusal).rejects.toThrow(ConfigurationError);
      await expect(refusal).rejects.toThrow(`${config().endpoint} ignores If-None-Match`);
      const kept = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
      expect(await kept.Body?.transformToString()).toBe("someone else's");
      client.destroy();
    });
  });
}

function record(bucket: string, key: string, how: { connection: S3Config } | { client: S3Client }) {
  return new S3ConditionalRecord<unknown>({ bucket, key, ...how });
}

/** What a server that ignores conditional headers receives: the PUT without them (removed before signing). */
function stripConditions(client: S3Client): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      const headers = (args.request as { headers?: Record<string, string> }).headers ?? {};
      delete headers["if-match"];
      delete headers["if-none-match"];
      return next(args);
    },
    { step: "build", name: "stripConditions" },
  );
}

/** Every PutObject goes to the server twice and the second answer is returned, as when the SDK retries a PUT whose answer was lost. */
function sendPutsTwice(client: S3Client): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName === "PutObjectCommand") await next(args).catch(() => {});
      return next(args);
    },
    { step: "build", name: "sendPutsTwice" },
  );
}

/** The HTTP status of each PutObject attempt the client makes, its SDK retries included. */
function putStatuses(client: S3Client): number[] {
  const statuses: number[] = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const result = await next(args);
      const status = (result.response as { statusCode?: number }).statusCode;
      if (context.commandName === "PutObjectCommand" && status !== undefined) statuses.push(status);
      return result;
    },
    // Below the deserializer, inside the retry loop: every attempt's raw answer.
    { step: "deserialize", name: "putStatuses" },
  );
  return statuses;
}
