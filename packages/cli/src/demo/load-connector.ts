/**
 * The connectors a demo writes through are optional peers of the CLI, imported only when a
 * demo asks for one, so a file-only user installs no database client.
 */

/** Imports `specifier`, or fails saying which `--sink` needs it and the command that installs it. */
export async function loadConnector<M>(specifier: string, sink: string): Promise<M> {
  try {
    return (await import(specifier)) as M;
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === "ERR_MODULE_NOT_FOUND" && String((error as Error).message).includes(`'${specifier}'`)) {
      throw new Error(
        `--sink ${sink} writes through ${specifier}, which is not installed; install it next to @exactly/cli: npm install ${specifier}`,
      );
    }
    throw error;
  }
}
