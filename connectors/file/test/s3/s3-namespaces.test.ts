// I8 on S3: what one S3 file sink keeps is out of reach of another sink's settings and
// records, and of the job's own checkpoints. A sink prefix inside the job's S3 checkpoint
// location (its checkpoints, write-ahead logs, shard leases, heads and layout) is refused at
// open, naming `prefix`; a record whose bucket directory would put its part there fails naming
// its position. A sink never takes for its own the uploads of a sink whose part prefix extends
// its own ("part-s" and "part-s-1"), and the local copies of one server's uploads are never
// swept by a sink of the same bucket and prefix on another server.

import { randomBytes } from "node:crypto";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AbortMultipartUploadCommand } from "@aws-sdk/client-s3";
import {
  type CheckpointStorage,
  ConfigurationError,
  DeliveryGuarantee,
  type RecordPosition,
  RecordWriteError,
} from "@exactly/core";
import { ShardCheckpointStorage } from "@exactly/core/internal";
import { type S3Config, s3Config, s3MotoConfig } from "@exactly/testkit/endpoints";
import { sinkContext } from "@exactly/testkit/sink-context";
import { afterAll, describe, expect, it } from "vitest";
import { FileTwoPhaseSink } from "../../src/index.ts";
import { S3CheckpointStorage, S3RecoverableWriter, s3FileSink } from "../../src/s3/index.ts";
import { dropBucket, ensureBucket, listKeys, openUploads, readObject, s3Client, testBucket } from "./helpers.ts";

interface Row {
  id: number;
  dir: string;
}

const at = (offset: number): RecordPosition => ({ source: "s", split: "0", offset });
const batch = (rows: Row[]) => ({ values: rows, positions: rows.map((r) => at(r.id)), timestamps: undefined });
const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => e,
  );
const unique = (label: string) => `${label}-${randomBytes(3).toString("hex")}`;
/** A private spool root (mkdtemp makes it 0700): sinks given the same one share their local copies' folders. */
const spoolRoot = () => mkdtemp(join(tmpdir(), "exactly-s3-i8-spool-"));

describe("I8: an S3 sink and the job's S3 checkpoint location", () => {
  const { bucket, s3 } = testBucket("i8-checkpoints", s3Config);

  const storages = (location: string): [string, CheckpointStorage][] => {
    const storage = new S3CheckpointStorage({ location, connection: s3Config() });
    return [
      ["S3CheckpointStorage", storage],
      ["a sharded job's storage on it", new ShardCheckpointStorage(storage, { index: 0, count: 2 })],
    ];
  };

  it.each([
    ["the location itself", (loc: string) => loc, (loc: string) => `s3://${bucket}/${loc}`],
    ["a folder inside it", (loc: string) => `${loc}/out`, (loc: string) => `s3://${bucket}/${loc}`],
    ["a shard's epoch folder", (loc: string) => `${loc}/shard-0/epoch-5`, (loc: string) => `s3://${bucket}/${loc}`],
    ["any prefix, when the location is the whole bucket", () => "out", () => `s3://${bucket}`],
  ])("a sink prefix that is %s is refused at open, naming prefix", async (_what, prefixOf, locationOf) => {
    await s3();
    const loc = unique("ckpt");
    for (const guarantee of [DeliveryGuarantee.EXACTLY_ONCE, DeliveryGuarantee.AT_LEAST_ONCE]) {
      for (const [kind, storage] of storages(locationOf(loc))) {
        const sink = s3FileSink<Row>({ bucket, prefix: prefixOf(loc), connection: s3Config(), guarantee });
        const error = await rejection(sink.open(sinkContext("files", { storage })));
        await sink.close();
        expect(error, `${guarantee}, ${kind}`).toBeInstanceOf(ConfigurationError);
        expect((error as ConfigurationError).setting).toBe("prefix");
        expect((error as Error).message).toContain(locationOf(loc));
      }
    }
  });

  it("a sink beside the location (a prefix that only starts with the same letters, another bucket) opens", async () => {
    await s3();
    const loc = unique("ckpt");
    for (const [prefix, location] of [
      [`${loc}-out`, `s3://${bucket}/${loc}`],
      [loc, `s3://${bucket}-elsewhere/${loc}`],
    ] as const) {
      const sink = s3FileSink<Row>({ bucket, prefix, connection: s3Config() });
      await sink.open(sinkContext("files", { storage: new S3CheckpointStorage({ location, connection: s3Config() }) }));
      await sink.close();
    }
  });

  it("a record whose bucket directory puts its part inside the location fails naming its position; nothing lands there", async () => {
    const client = await s3();
    const parent = unique("jobs");
    const loc = `${parent}/ckpt`;
    const storage = new S3CheckpointStorage({ location: `s3://${bucket}/${loc}`, connection: s3Config() });
    const sink = s3FileSink<Row>({
      bucket,
      prefix: parent,
      connection: s3Config(),
      bucketAssigner: (r) => r.dir,
    });
    await sink.open(sinkContext("files", { storage }));
    try {
      // "ckpt/chk-9" would be a checkpoint folder the storage's retention deletes, and ids would jump to 9.
      for (const [id, dir] of [
        [2, "ckpt/chk-9"],
        [3, "ckpt/logs/files/0-1"],
        [4, "ckpt"],
      ] as const) {
        const error = await rejection(Promise.resolve().then(() => sink.writeBatch(batch([{ id, dir }]))));
        expect(error, dir).toBeInstanceOf(RecordWriteError);
        expect((error as RecordWriteError).position).toEqual(at(id));
        expect((error as Error).message).toContain(`s3://${bucket}/${loc}`);
      }
      await sink.writeBatch(batch([{ id: 1, dir: "ckpt-2026" }]));
      await sink.snapshotState(1);
      await sink.notifyCheckpointComplete(1);
    } finally {
      await sink.close();
    }
    const keys = await listKeys(client, bucket, `${parent}/`);
    expect(keys).toHaveLength(1);
    expect(keys[0]).toMatch(new RegExp(`^${parent}/ckpt-2026/part-files-0-1-\\d+-[0-9a-f]{12}$`));
    expect(await openUploads(client, bucket, `${parent}/`)).toEqual([]);
  });
});

describe("I8: an S3 sink's uploads and local copies are its own", () => {
  const { bucket, s3 } = testBucket("i8-uploads", s3Config);

  it("a sink never aborts the pre-committed upload of a sink whose part prefix extends its own", async () => {
    const client = await s3();
    const prefix = unique("out");
    const spoolDirectory = await spoolRoot();
    const options = { bucket, prefix, connection: s3Config(), spoolDirectory };
    // Sink "s-1" names its parts "part-s-1-<subtask>-…": to sink "s", a part of its subtask 1.
    const longer = s3FileSink<Row>(options);
    await longer.open(sinkContext("s-1"));
    try {
      await longer.writeBatch(batch([{ id: 1, dir: "" }]));
      await longer.snapshotState(1);
      const [pending] = await openUploads(client, bucket, `${prefix}/`);
      expect(pending?.key).toMatch(new RegExp(`^${prefix}/part-s-1-0-1-0-[0-9a-f]{12}$`));
      // A fresh start of sink "s" (one subtask, so it owns every index above 0) cleans up its own.
      const shorter = s3FileSink<Row>(options);
      await shorter.open(sinkContext("s"));
      await shorter.close();
      expect(await openUploads(client, bucket, `${prefix}/`)).toEqual([pending]);
      await longer.notifyCheckpointComplete(1);
    } finally {
      await longer.close();
    }
    const keys = await listKeys(client, bucket, `${prefix}/`);
    expect(keys).toHaveLength(1);
    expect(await readObject(client, bucket, keys[0] as string)).toBe('{"id":1,"dir":""}\n');
  });

  describe("two servers", () => {
    // One bucket name on both servers; dropped from both after the test.
    const shared = `exactly-i8-${randomBytes(4).toString("hex")}`;
    const made: S3Config[] = [];
    afterAll(async () => {
      for (const config of made) {
        const client = s3Client(config);
        await dropBucket(client, shared).catch(() => {});
        client.destroy();
      }
    });

    it("a sink on another server, with the same bucket and prefix, leaves the local copies of this server's uploads", async () => {
      const [minio, moto] = [s3Config(), s3MotoConfig()];
      const minioClient = s3Client(minio);
      try {
        for (const config of [minio, moto]) {
          const client = s3Client(config);
          await ensureBucket(client, shared);
          made.push(config);
          client.destroy();
        }
        const prefix = unique("out");
        const spoolDirectory = await spoolRoot();
        const writerOn = (connection: S3Config) =>
          new S3RecoverableWriter({ bucket: shared, prefix, connection, spoolDirectory });
        const ours = writerOn(minio);
        // The local copies of uploaded parts (beside them lie the records of open uploads, `.upload`).
        const copies = async () => (await ours.retained.list()).filter((name) => !name.endsWith(".upload"));
        const sink = new FileTwoPhaseSink<Row>({ writer: ours });
        await sink.open(sinkContext("ours"));
        try {
          await sink.writeBatch(batch([{ id: 1, dir: "" }]));
          await sink.snapshotState(1);
          expect(await copies()).toHaveLength(1);
          // The other server's sink finds none of our uploads open there, and cleans up its copies.
          const theirs = new FileTwoPhaseSink<Row>({ writer: writerOn(moto) });
          await theirs.open(sinkContext("theirs"));
          await theirs.close();
          expect(await copies()).toHaveLength(1);
          // MinIO loses the upload (as when a client dies during its completion): the copy publishes it again.
          const [upload] = await openUploads(minioClient, shared, `${prefix}/`);
          await minioClient.send(
            new AbortMultipartUploadCommand({ Bucket: shared, Key: upload?.key, UploadId: upload?.uploadId }),
          );
          await sink.notifyCheckpointComplete(1);
        } finally {
          await sink.close();
        }
        const keys = await listKeys(minioClient, shared, `${prefix}/`);
        expect(keys).toHaveLength(1);
        expect(await readObject(minioClient, shared, keys[0] as string)).toBe('{"id":1,"dir":""}\n');
      } finally {
        minioClient.destroy();
      }
    });
  });
});
