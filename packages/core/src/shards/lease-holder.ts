/**
 * Where a lease's holder runs, and whether a process on the same machine can tell that it is
 * gone (docs/design.md §2, Recovery and Shards). A holder is only ever judged gone when that is
 * certain: this very thread, whose lease no job holds any more; or the same kernel boot and PID
 * namespace (so its process id means the same process here, which only Linux says) and no
 * such process left, or only its zombie. Anything else (another machine, another system, a
 * process that still exists) is left to the lease's duration, judged by the watcher's clock.
 */
import { randomBytes } from "node:crypto";
import { readFile, readlink } from "node:fs/promises";
import { isNotFound } from "../util/durable-fs.ts";

/** What a lease record says of the process holding it. @public */
export interface LeaseHolderProcess {
  /** The kernel's boot id and the PID namespace: process ids compare only where both are equal. Absent where the system does not say. */
  readonly machine?: string;
  readonly pid: number;
  /** New for every thread of every process: a lease of this very thread is known by it on any system. */
  readonly thread: string;
}

let machine: Promise<string | undefined> | undefined;

/** This machine as a holder's `machine`; undefined where the system does not say (not Linux). */
function thisMachine(): Promise<string | undefined> {
  machine ??= (async () => {
    try {
      const boot = (await readFile("/proc/sys/kernel/random/boot_id", "utf8")).trim();
      return `${boot}/${await readlink("/proc/self/ns/pid")}`;
    } catch {
      return undefined;
    }
  })();
  return machine;
}

/**
 * Whether a holder of this machine that is gone can be told (Linux); elsewhere every successor waits the lease out.
 * @internal
 */
export async function canTellGoneHolders(): Promise<boolean> {
  return (await thisMachine()) !== undefined;
}

// On globalThis, so two copies of this module in one thread (sources and build) share them.
const HELD_KEY = Symbol.for("@exactly/core:heldLeases");
const THREAD_KEY = Symbol.for("@exactly/core:leaseThread");

function thisThread(): string {
  const holder = globalThis as unknown as Record<symbol, string | undefined>;
  holder[THREAD_KEY] ??= randomBytes(8).toString("hex");
  return holder[THREAD_KEY];
}

/** This thread of this process, for the lease record. */
export async function thisHolderProcess(): Promise<LeaseHolderProcess> {
  const here = await thisMachine();
  return { ...(here === undefined ? {} : { machine: here }), pid: process.pid, thread: thisThread() };
}

/**
 * The leases a job of this thread holds now (taken, not yet released or closed), by nonce,
 * and whether it is renewing each one.
 */
function heldInThisThread(): Map<string, boolean> {
  const holder = globalThis as unknown as Record<symbol, Map<string, boolean> | undefined>;
  let held = holder[HELD_KEY];
  if (!held) {
    held = new Map();
    holder[HELD_KEY] = held;
  }
  return held;
}

/** A job of this thread holds the lease `nonce`, renewing it or not. */
export function holdInThisThread(nonce: string, renewing: boolean): void {
  heldInThisThread().set(nonce, renewing);
}

export function letGoInThisThread(nonce: string): void {
  heldInThisThread().delete(nonce);
}

/**
 * What this process can tell of the holder `at` (with the lease's `nonce`): `gone` for a lease
 * of this very thread that no job holds any more (a job that failed or was cancelled, whose
 * lease was never released), or a process of this machine that no longer runs; `alive` for a
 * lease a job of this thread holds and renews; `unknown` otherwise, left to the lease's duration.
 */
export async function holderState(
  at: LeaseHolderProcess | undefined,
  nonce: string | undefined,
): Promise<"gone" | "alive" | "unknown"> {
  if (!at) return "unknown";
  if (at.thread === thisThread()) {
    const renewing = nonce === undefined ? undefined : heldInThisThread().get(nonce);
    return renewing === undefined ? "gone" : renewing ? "alive" : "unknown";
  }
  const here = await thisMachine();
  // Another thread of this process keeps its leases to itself: this one cannot tell.
  if (here === undefined || at.machine !== here || at.pid === process.pid) return "unknown";
  return (await processGone(at.pid)) ? "gone" : "unknown";
}

/** No process `pid` in this PID namespace, or only its zombie (it ended; its parent has not reaped it yet). */
async function processGone(pid: number): Promise<boolean> {
  let stat: string;
  try {
    stat = await readFile(`/proc/${pid}/stat`, "utf8");
  } catch (error) {
    return isNotFound(error);
  }
  // The state follows the command name, which is in parentheses and may hold ") " itself.
  const end = stat.lastIndexOf(")");
  const state = stat.slice(end + 2, end + 3);
  return state === "Z" || state === "X";
}
