// moto's server on a port of its own (below the ephemeral range), state in .services/s3-moto.

import { daemonLauncher } from "../core/launcher.ts";
import { serviceDir } from "../core/paths.ts";
import type { Launcher } from "../core/service-module.ts";
import { motoDaemon } from "../s3/launcher.ts";
import { DEFAULT_S3_REGION, type S3Endpoint } from "../s3/module.ts";
import { s3Moto } from "./module.ts";

const PORT = 29000;

const endpoint = (): S3Endpoint => ({
  endpoint: `http://127.0.0.1:${PORT}`,
  region: DEFAULT_S3_REGION,
  accessKeyId: "testing",
  secretAccessKey: "testing",
  forcePathStyle: true,
});

export const s3MotoLauncher: Launcher<S3Endpoint> = daemonLauncher(
  motoDaemon({ module: s3Moto, port: PORT, dir: () => serviceDir("s3-moto"), endpoint }),
);
