// S3: an object store that enforces multipart uploads, for the S3 file sink. EXACTLY_S3_ENDPOINT
// with its keys, else a MinIO container, else MinIO (or moto) run by the local launcher.

import { envValue } from "../core/env.ts";
import type { ServiceModule } from "../core/service-module.ts";
import { DEFAULT_S3_REGION, type S3Endpoint } from "./endpoint.ts";

const ENDPOINT = "EXACTLY_S3_ENDPOINT";
const ACCESS_KEY = "EXACTLY_S3_ACCESS_KEY";
const SECRET_KEY = "EXACTLY_S3_SECRET_KEY";
const REGION = "EXACTLY_S3_REGION";

export const s3: ServiceModule<S3Endpoint, "s3"> = {
  name: "s3",
  envHint: `${ENDPOINT} (+ ${ACCESS_KEY}, ${SECRET_KEY})`,
  fromEnv(env) {
    const endpoint = envValue(env, ENDPOINT);
    if (endpoint === undefined) return undefined;
    const accessKeyId = envValue(env, ACCESS_KEY);
    const secretAccessKey = envValue(env, SECRET_KEY);
    if (accessKeyId === undefined || secretAccessKey === undefined) {
      const missing = [accessKeyId ? undefined : ACCESS_KEY, secretAccessKey ? undefined : SECRET_KEY];
      throw new Error(`${ENDPOINT} is set but ${missing.filter(Boolean).join(" and ")} is not`);
    }
    const region = envValue(env, REGION) ?? DEFAULT_S3_REGION;
    return { endpoint, region, accessKeyId, secretAccessKey, forcePathStyle: true };
  },
  toEnv: (e) => ({
    [ENDPOINT]: e.endpoint,
    [ACCESS_KEY]: e.accessKeyId,
    [SECRET_KEY]: e.secretAccessKey,
    [REGION]: e.region,
  }),
  describe: (endpoint) => endpoint.endpoint,
  startContainer: async () => (await import("./container.ts")).startS3Container(),
  launcher: async () => (await import("./launcher.ts")).s3Launcher(s3),
  probe: async (endpoint) => (await import("./probe.ts")).probeS3(endpoint),
  restart: { label: "S3 server", commandVariable: "EXACTLY_S3_RESTART_COMMAND", timeoutMs: 60_000 },
};
