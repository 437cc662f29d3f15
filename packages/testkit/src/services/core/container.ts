// What the container step shares across services. testcontainers is imported lazily, so that
// machines without a container runtime never load it.

import type { StartedTestContainer } from "testcontainers";
import type { ServiceContainer } from "./service-module.ts";
import { withTimeout } from "./wait.ts";

/**
 * True if a container runtime answers. Bounded in time: a DOCKER_HOST pointing at a machine
 * that does not answer must not hold up the test run.
 */
export async function containerRuntimeAvailable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await withTimeout(getContainerRuntimeClient(), 10_000, "container runtime");
    return true;
  } catch {
    return false;
  }
}

export function serviceContainer<E>(container: StartedTestContainer, endpoint: E): ServiceContainer<E> {
  return { endpoint, containerId: container.getId(), stop: async () => void (await container.stop()) };
}

/** Restarts a container by id (from a test worker, which does not hold the container object). */
export async function restartContainer(containerId: string): Promise<void> {
  const { getContainerRuntimeClient } = await import("testcontainers");
  const client = await getContainerRuntimeClient();
  await client.container.restart(client.container.getById(containerId), { timeout: 10 });
}
