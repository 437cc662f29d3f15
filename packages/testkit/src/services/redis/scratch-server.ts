// A second, short-lived redis-server with settings of a test's choosing (the durability check
// needs a server with `appendonly no`, and one that refuses CONFIG). Same binary as the
// launcher; its own port and directory; stopped and deleted by `stop`.

import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../core/ports.ts";
import { waitFor } from "../core/wait.ts";
import { redisServer } from "./launcher.ts";

export interface ScratchRedis {
  readonly url: string;
  stop(): Promise<void>;
}

/** Starts redis-server with `directives` (lines of redis.conf, e.g. "appendonly no"). */
export async function startScratchRedis(directives: readonly string[]): Promise<ScratchRedis> {
  const binary = redisServer();
  if (!binary) throw new Error("redis-server not found: `pnpm services up redis` installs it");
  const dir = mkdtempSync(join(tmpdir(), "exactly-scratch-redis-"));
  const port = await freePort();
  const args = ["--bind", "127.0.0.1", "--port", String(port), "--dir", dir, "--save", ""];
  for (const line of directives) {
    const [name, ...value] = line.split(" ");
    args.push(`--${name}`, ...value);
  }
  const child = spawn(binary, args, { stdio: "ignore" });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const url = `redis://127.0.0.1:${port}`;
  const { Redis } = await import("ioredis");
  try {
    await waitFor(
      `redis-server on ${port}`,
      async () => {
        const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0 });
        client.on("error", () => {});
        try {
          await client.connect();
          await client.ping();
        } finally {
          client.disconnect();
        }
      },
      { timeoutMs: 20_000, intervalMs: 100, giveUpIf: () => (child.exitCode !== null ? "it exited" : undefined) },
    );
  } catch (error) {
    child.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url,
    stop: async () => {
      if (child.exitCode === null) {
        child.kill("SIGKILL");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
