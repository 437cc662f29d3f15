/**
 * The connectors are optional peers of the CLI, imported only when a command asks for one
 * (a demo's `--sink`, `exactly lingering kafka`), so a file-only user installs no database
 * client.
 */

import { ConfigurationError } from "@exactly/core";

/**
 * Imports `specifier`, or fails saying which option or command (`user`: "--sink redis")
 * needs it and the command that installs it. `peers`: packages the connector itself imports
 * that a user installs beside it (the S3 SDK for `@exactly/file/s3`).
 */
export async function loadConnector<M>(specifier: string, user: string, peers: readonly string[] = []): Promise<M> {
  try {
    return (await import(specifier)) as M;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    const message = String((error as Error).message);
    const missing = [specifier, ...peers].find((name) => message.includes(`'${name}'`));
    if (code === "ERR_MODULE_NOT_FOUND" && missing !== undefined) {
      if (missing === specifier) {
        throw new ConfigurationError(
          user,
          `needs ${specifier}, which is not installed; install it next to @exactly/cli: npm install ${specifier}`,
        );
      }
      throw new ConfigurationError(
        user,
        `needs ${specifier}, which needs ${missing}, not installed; install it next to @exactly/cli: npm install ${missing}`,
      );
    }
    throw error;
  }
}
