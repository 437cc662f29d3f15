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
      const what = missing === specifier ? "which is not installed" : `which needs ${missing}, not installed`;
      throw new ConfigurationError(
        user,
        `needs ${specifier}, ${what}; install it next to @exactly/cli: ${howToInstall(missing)}`,
      );
    }
    throw error;
  }
}

/** Our packages are on no registry yet: they are packed from a clone (docs/getting-started.md). */
function howToInstall(name: string): string {
  if (!name.startsWith("@exactly/")) return `npm install ${name}`;
  const folder = name.slice("@exactly/".length);
  return (
    `${name} is not on npm yet: in a clone of the repository, pnpm install, then pnpm pack its package ` +
    `(docs/getting-started.md, "Build and pack the packages"), and npm install the exactly-${folder}-<version>.tgz it makes`
  );
}
