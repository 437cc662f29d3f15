// The S3 file sink's behaviour suite on the main S3 server (MinIO), and what only MinIO checks:
// credentials (moto accepts any).
import { randomBytes } from "node:crypto";
import { inspect } from "node:util";
import { s3Config } from "@exactly/testkit/endpoints";
import { describe, expect, it } from "vitest";
import { s3FileSink } from "../../src/s3/index.ts";
import { testBucket } from "./helpers.ts";
import { configurationErrorIn, runS3Job, s3SinkSuite } from "./s3-sink-suite.ts";

s3SinkSuite("MinIO", s3Config);

describe("S3 file sink credentials the server refuses", () => {
  const { bucket, s3 } = testBucket("creds", s3Config);

  it.each([
    ["a wrong secret key", (real: { accessKeyId: string }, wrong: string) => ({ ...real, secretAccessKey: wrong })],
    [
      "an unknown access key",
      (_real: { accessKeyId: string }, wrong: string) => ({
        accessKeyId: `AK${wrong.slice(0, 16)}`,
        secretAccessKey: wrong,
      }),
    ],
  ])("are refused at once with %s, naming the setting and never the secret", async (_label, credentialsOf) => {
    await s3();
    const config = s3Config();
    const wrong = `wrong${randomBytes(16).toString("hex")}`;
    const connection = { ...config, credentials: credentialsOf(config.credentials, wrong) };
    const error = await runS3Job(() => s3FileSink({ bucket, prefix: "p", connection }), [{ id: 1 }]);
    expect(configurationErrorIn(error)?.setting).toBe("credentials");
    const shown = inspect(error, { depth: null });
    expect(shown).not.toContain(wrong);
    expect(shown).not.toContain(config.credentials.secretAccessKey);
  });
});
