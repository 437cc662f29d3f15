// What global setup hands to test workers through vitest's provide/inject. Values cross a
// process boundary, so they are plain data.

import type { Endpoints, ServiceName } from "./service-env.ts";

/** Where an endpoint came from, in the order they are tried. */
export type ServiceSource = "env" | "container" | "launcher";

export type ProvidedService<S extends ServiceName> =
  | { ok: true; source: ServiceSource; endpoint: Endpoints[S]; containerId?: string }
  | { ok: false; error: string };

export type ProvidedServices = { [S in ServiceName]: ProvidedService<S> };

export const PROVIDED_KEY = "exactlyServices";

declare module "vitest" {
  export interface ProvidedContext {
    exactlyServices: ProvidedServices;
  }
}
