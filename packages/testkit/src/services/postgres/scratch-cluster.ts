// A second, short-lived PostgreSQL cluster with settings of a test's choosing, for behaviour
// that depends on a server setting the shared test server cannot change without a restart
// (max_prepared_transactions = 0, as on most managed Postgres). Same Debian binaries as the
// launcher; its own data directory and port; stopped and deleted by `stop`.

import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../core/ports.ts";
import { asPostgres, postgresUser, requireBinDir } from "./launcher.ts";

export interface ScratchCluster {
  readonly url: string;
  stop(): Promise<void>;
}

/**
 * initdb and start a cluster with `settings` (name → value, as in postgresql.conf). Needs the
 * server binaries the local launcher installs; throws, naming what is missing, without them.
 */
export async function startScratchCluster(settings: Record<string, string | number>): Promise<ScratchCluster> {
  requireBinDir();
  // /var/tmp, not the clone: the postgres user must be able to reach the directory.
  const root = mkdtempSync("/var/tmp/exactly-scratch-pg-");
  const data = join(root, "data");
  try {
    if (process.getuid?.() === 0) {
      const owner = await postgresUser();
      chownSync(root, owner.uid, owner.gid);
    }
    await asPostgres("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale"]);
    const port = await freePort();
    const options = Object.entries({
      ...settings,
      port,
      listen_addresses: "127.0.0.1",
      unix_socket_directories: "",
      fsync: "off",
    })
      .map(([name, value]) => `-c ${name}=${value === "" ? "''" : value}`)
      .join(" ");
    await asPostgres("pg_ctl", ["start", "-D", data, "-w", "-t", "60", "-o", options]);
    return {
      url: `postgres://postgres@127.0.0.1:${port}/postgres`,
      stop: async () => {
        await asPostgres("pg_ctl", ["stop", "-D", data, "-m", "immediate", "-w", "-t", "60"]).catch(() => {});
        rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}
