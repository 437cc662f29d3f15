/**
 * Claims on names that must be unique in one process (the Kafka sink's transactional-id
 * prefix: two sinks on one prefix would abort each other's transactions as lingering, I7).
 * A module global cannot hold them once subtasks run on worker threads (each thread has its
 * own copy of every module), so the registry is the main thread's: a worker's claim is a
 * message its threaded execution answers (threads/threaded-execution.ts), the same registry
 * a sink on the main thread claims from directly.
 */
import { isMainThread } from "node:worker_threads";

/** Who holds a claimed name: one sink (`owner`), any of whose subtasks (`part`) may share it. @internal */
export interface ClaimHolder {
  readonly owner: string;
  readonly part: number;
}

/** A claim's answer: granted, or refused with who holds the name. @internal */
export type ClaimResult = { readonly granted: true } | { readonly granted: false; readonly heldBy: string };

/** How a worker thread sends claims to the main thread (set by the worker's entry point). */
export interface ClaimTransport {
  claim(namespace: string, name: string, holder: ClaimHolder): Promise<ClaimResult>;
  release(namespace: string, name: string, part: number): void;
}

interface Holding {
  readonly owner: string;
  readonly parts: Set<number>;
}

// On globalThis, so two copies of this module in one thread (sources and build) share them.
const REGISTRY_KEY = Symbol.for("@exactly/core:processClaims");
const TRANSPORT_KEY = Symbol.for("@exactly/core:claimTransport");
type Holder = Record<symbol, unknown>;

function registry(): Map<string, Holding> {
  const holder = globalThis as unknown as Holder;
  let claims = holder[REGISTRY_KEY] as Map<string, Holding> | undefined;
  if (!claims) {
    claims = new Map();
    holder[REGISTRY_KEY] = claims;
  }
  return claims;
}

/** Worker threads only: where this thread's claims go. */
export function setClaimTransport(transport: ClaimTransport): void {
  (globalThis as unknown as Holder)[TRANSPORT_KEY] = transport;
}

/** The registry itself: what the main thread answers a claim with (from its own sinks or a worker). */
export function claimLocally(namespace: string, name: string, holder: ClaimHolder): ClaimResult {
  const claims = registry();
  const key = `${namespace}\u0000${name}`;
  const held = claims.get(key);
  if (held && (held.owner !== holder.owner || held.parts.has(holder.part)))
    return { granted: false, heldBy: held.owner };
  if (held) held.parts.add(holder.part);
  else claims.set(key, { owner: holder.owner, parts: new Set([holder.part]) });
  return { granted: true };
}

export function releaseLocally(namespace: string, name: string, part: number): void {
  const claims = registry();
  const key = `${namespace}\u0000${name}`;
  const held = claims.get(key);
  if (!held) return;
  held.parts.delete(part);
  if (held.parts.size === 0) claims.delete(key);
}

/**
 * Claims `name` in `namespace` for part `holder.part` of `holder.owner`, in the whole
 * process: refused when another owner holds it, or this part already does. Release it when
 * the part closes, so a restart in the same process can claim it again.
 * @internal
 */
export function claimInProcess(namespace: string, name: string, holder: ClaimHolder): Promise<ClaimResult> {
  const transport = (globalThis as unknown as Holder)[TRANSPORT_KEY] as ClaimTransport | undefined;
  if (!isMainThread && transport) return transport.claim(namespace, name, holder);
  return Promise.resolve(claimLocally(namespace, name, holder));
}

/** @internal */
export function releaseInProcess(namespace: string, name: string, part: number): void {
  const transport = (globalThis as unknown as Holder)[TRANSPORT_KEY] as ClaimTransport | undefined;
  if (!isMainThread && transport) transport.release(namespace, name, part);
  else releaseLocally(namespace, name, part);
}
