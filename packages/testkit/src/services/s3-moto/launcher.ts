// moto's server on a port of its own (below the ephemeral range), state in .services/s3-moto.

import { daemonLauncher } from "../core/launcher.ts";
import { serviceDir } from "../core/paths.ts";
import type { Launcher, ServiceModule } from "../core/service-module.ts";
import { DEFAULT_S3_REGION, type S3Endpoint } from "../s3/endpoint.ts";
import { motoDaemon } from "../s3/launcher.ts";

const PORT = 29000;

const endpoint = (): S3Endpoint => ({
  endpoint: `http://127.0.0.1:${PORT}`,
  region: DEFAULT_S3_REGION,
  accessKeyId: "testing",
  secretAccessKey: "testing",
  forcePathStyle: true,
});

/** The launcher of the second S3 server: its module hands itself over when it loads this file. */
export function s3MotoLauncher(module: ServiceModule<S3Endpoint>): Launcher<S3Endpoint> {
  return daemonLauncher(motoDaemon({ module, port: PORT, dir: () => serviceDir("s3-moto"), endpoint }));
}
