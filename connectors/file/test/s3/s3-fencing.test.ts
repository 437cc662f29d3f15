// I9 for the file sink on S3 (MinIO): the old owner's late commit is harmless, nothing it
// completes after the takeover is published, and its multipart uploads are aborted by the
// successor's next recovery at the latest (../takeover-scenario.ts).

import { s3Config } from "@exactly/testkit/endpoints";
import { describe, it } from "vitest";
import { s3FileSink } from "../../src/s3/index.ts";
import { type Row, runTakeover } from "../takeover-scenario.ts";
import { idCountsUnder, openUploads, testBucket } from "./helpers.ts";

const { bucket, s3 } = testBucket("fence", s3Config);

describe("I9: the file sink on S3 across a takeover", () => {
  it("the old owner's late commit is harmless, what it pre-commits after the takeover is never published, and the successor's next recovery aborts its uploads", async () => {
    const client = await s3();
    const prefix = "fenced";
    await runTakeover({
      sink: () => s3FileSink<Row>({ bucket, prefix, connection: s3Config() }),
      published: async () => {
        const counts = await idCountsUnder(client, bucket, `${prefix}/`);
        return [...counts].flatMap(([id, n]) => Array<number>(n).fill(id)).sort((a, b) => a - b);
      },
      unpublished: async () => (await openUploads(client, bucket, `${prefix}/`)).length,
    });
  });
});
