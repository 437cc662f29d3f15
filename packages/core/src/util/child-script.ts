import { fileURLToPath } from "node:url";

/**
 * How to start `name` (a module beside `moduleUrl`) in a child Node process. From built
 * JavaScript that is `name.js`; from the TypeScript sources (tests, `pnpm demo` in the
 * repo) it is `name.ts`, run by Node's type stripping with the condition that resolves
 * workspace packages to their sources.
 * @internal
 */
export function siblingScript(moduleUrl: string, name: string): { path: string; execArgv: string[] } {
  const fromSource = moduleUrl.endsWith(".ts");
  const path = fileURLToPath(new URL(`./${name}.${fromSource ? "ts" : "js"}`, moduleUrl));
  const execArgv = fromSource ? ["--conditions=@exactly/source", "--disable-warning=ExperimentalWarning"] : [];
  return { path, execArgv };
}
