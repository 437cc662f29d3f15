// vitest globalSetup: resolves an endpoint for each service once per run (environment variable,
// else container, else local launcher; see core/resolve.ts) and provides them to the test
// workers, where endpoints.ts reads them. A service that cannot be resolved does not stop the
// run: the tests that ask for it fail with the reason, the others still run.

import type { TestProject } from "vitest/node";
import { PROVIDED_KEY, resolveServices } from "./core/resolve.ts";
import { SERVICES } from "./modules.ts";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const resolution = await resolveServices(SERVICES, (line) => console.log(`[services] ${line}`));
  project.provide(PROVIDED_KEY, resolution.provided);
  for (const [service, entry] of Object.entries(resolution.provided)) {
    if (!entry.ok) console.warn(`[services] ${service} unavailable: ${entry.error}`);
  }
  return () => resolution.release();
}
