// A second S3 implementation beside MinIO: moto's server mode, which answers some calls
// differently (conditional writes, a repeated CompleteMultipartUpload, listing uploads by
// prefix), so the S3 sink's tests run against both. EXACTLY_S3_MOTO_ENDPOINT (+ the keys
// below), else moto run by the local launcher on its own port. No container step: the
// project pins moto from PyPI, and a container would need a runtime this machine lacks.

import { envValue } from "../core/env.ts";
import type { ServiceModule } from "../core/service-module.ts";
import { DEFAULT_S3_REGION, type S3Endpoint } from "../s3/endpoint.ts";

const ENDPOINT = "EXACTLY_S3_MOTO_ENDPOINT";
const ACCESS_KEY = "EXACTLY_S3_MOTO_ACCESS_KEY";
const SECRET_KEY = "EXACTLY_S3_MOTO_SECRET_KEY";

export const s3Moto: ServiceModule<S3Endpoint, "s3-moto"> = {
  name: "s3-moto",
  envHint: `${ENDPOINT} (+ ${ACCESS_KEY}, ${SECRET_KEY})`,
  fromEnv(env) {
    const endpoint = envValue(env, ENDPOINT);
    if (endpoint === undefined) return undefined;
    return {
      endpoint,
      region: DEFAULT_S3_REGION,
      // moto accepts any keys; a real second server would need its own.
      accessKeyId: envValue(env, ACCESS_KEY) ?? "testing",
      secretAccessKey: envValue(env, SECRET_KEY) ?? "testing",
      forcePathStyle: true,
    };
  },
  toEnv: (e) => ({ [ENDPOINT]: e.endpoint, [ACCESS_KEY]: e.accessKeyId, [SECRET_KEY]: e.secretAccessKey }),
  describe: (endpoint) => endpoint.endpoint,
  startContainer: async () => {
    throw new Error(`no container for moto: set ${ENDPOINT}, or EXACTLY_SERVICES_PROVIDER=launcher`);
  },
  launcher: async () => (await import("./launcher.ts")).s3MotoLauncher(s3Moto),
  probe: async (endpoint) => (await import("../s3/probe.ts")).probeS3(endpoint),
};
