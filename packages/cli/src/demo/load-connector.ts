/**
 * The connectors a demo writes through are optional peers of the CLI, imported only when a
 * demo asks for one, so a file-only user installs no database client.
 */

/**
 * Imports `specifier`, or fails saying which `--sink` needs it and the command that installs
 * it. `peers`: packages the connector itself imports that a user installs beside it (the S3
 * SDK for `@exactly/file/s3`).
 */
export async function loadConnector<M>(specifier: string, sink: string, peers: readonly string[] = []): Promise<M> {
  try {
    return (await import(specifier)) as M;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    const message = String((error as Error).message);
    const missing = [specifier, ...peers].find((name) => message.includes(`'${name}'`));
    if (code === "ERR_MODULE_NOT_FOUND" && missing !== undefined) {
      if (missing === specifier) {
        throw new Error(
          `--sink ${sink} writes through ${specifier}, which is not installed; install it next to @exactly/cli: npm install ${specifier}`,
        );
      }
      throw new Error(
        `--sink ${sink} writes through ${specifier}, which needs ${missing}, not installed; install it next to @exactly/cli: npm install ${missing}`,
      );
    }
    throw error;
  }
}
