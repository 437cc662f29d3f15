import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const exec = promisify(execFile);
const root = resolve(fileURLToPath(new URL("../..", import.meta.url)));
const bin = (name: string) => join(root, "node_modules", ".bin", name);

/** Type-checks a user's file against the packages installed in `dir`, as a strict TypeScript project would. */
async function typeCheck(dir: string, file: string): Promise<void> {
  await exec(
    bin("tsc"),
    [
      "--noEmit",
      "--strict",
      "--module",
      "nodenext",
      "--moduleResolution",
      "nodenext",
      "--target",
      "es2023",
      "--types",
      "node",
      "--typeRoots",
      join(root, "node_modules/@types"),
      file,
    ],
    { cwd: dir },
  );
}

/**
 * Installs core and one connector from their tarballs into a fresh npm project, checks that
 * the connector brings its client (`brings`) and not another connector's (`without`), then
 * type-checks and runs `job` (TypeScript that builds a `sink`) and returns what it prints of it.
 */
async function runAlone(
  packs: string,
  connector: string,
  { brings, without, job }: { brings: string; without: string; job: string },
): Promise<unknown> {
  const app = await mkdtemp(join(tmpdir(), `exactly-${connector}-app-`));
  await writeFile(
    join(app, "package.json"),
    JSON.stringify({ name: `${connector}-app`, private: true, type: "module" }),
  );
  await exec(
    "npm",
    [
      "install",
      "--no-audit",
      "--no-fund",
      join(packs, "exactly-core-0.1.0.tgz"),
      join(packs, `exactly-${connector}-0.1.0.tgz`),
    ],
    { cwd: app },
  );
  expect(existsSync(join(app, "node_modules", brings))).toBe(true);
  expect(existsSync(join(app, "node_modules", without))).toBe(false);
  await writeFile(
    join(app, "job.ts"),
    `${job}
console.log(JSON.stringify({ guarantee: sink.guarantee, capabilities: sink.capabilities, kind: sink.constructor.name }));
`,
  );
  await typeCheck(app, "job.ts");
  const run = await exec(process.execPath, ["--disable-warning=ExperimentalWarning", "job.ts"], { cwd: app });
  return JSON.parse(run.stdout);
}

/** Packs the workspace packages as a release would, then installs them with npm outside the workspace. */
describe("packages install alone", () => {
  it("core, the connectors and cli pack with built JS, declarations and exports, and run in a fresh npm project", async () => {
    const packages = [
      "packages/core",
      "connectors/file",
      "connectors/kafka",
      "connectors/postgres",
      "connectors/redis",
      "examples/kafka-window-sum",
      "packages/conformance",
      "packages/cli",
    ];
    await exec(bin("tsc"), ["-b", ...packages], { cwd: root });
    const packs = await mkdtemp(join(tmpdir(), "exactly-packs-"));
    for (const pkg of packages) {
      await exec("pnpm", ["pack", "--pack-destination", packs], { cwd: join(root, pkg) });
    }
    const tarballs = (await readdir(packs)).filter((n) => n.endsWith(".tgz")).sort();
    expect(tarballs).toEqual([
      "exactly-cli-0.1.0.tgz",
      "exactly-conformance-0.1.0.tgz",
      "exactly-core-0.1.0.tgz",
      "exactly-example-kafka-window-sum-0.1.0.tgz",
      "exactly-file-0.1.0.tgz",
      "exactly-kafka-0.1.0.tgz",
      "exactly-postgres-0.1.0.tgz",
      "exactly-redis-0.1.0.tgz",
    ]);

    // Each package's types resolve as its JavaScript does, for ESM consumers under Node and
    // bundlers (the packages are ESM only: CommonJS require() is out of scope, and ignored).
    for (const tarball of tarballs) {
      const checked = await exec(bin("attw"), [
        "--profile",
        "esm-only",
        "--format",
        "ascii",
        join(packs, tarball),
      ]).catch((error: { code: number; stdout: string }) => error);
      expect((checked as { code?: number }).code ?? 0, `${tarball}: ${(checked as { stdout: string }).stdout}`).toBe(0);
    }

    const app = await mkdtemp(join(tmpdir(), "exactly-app-"));
    await writeFile(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
    // Core and the file connector alone: what a user who writes one job installs.
    await exec(
      "npm",
      [
        "install",
        "--no-audit",
        "--no-fund",
        join(packs, "exactly-core-0.1.0.tgz"),
        join(packs, "exactly-file-0.1.0.tgz"),
      ],
      {
        cwd: app,
      },
    );
    const core = JSON.parse(await readFile(join(app, "node_modules/@exactly/core/package.json"), "utf8"));
    expect(core.exports["."].types).toBe("./dist/index.d.ts");
    const file = JSON.parse(await readFile(join(app, "node_modules/@exactly/file/package.json"), "utf8"));
    expect(file.peerDependencies["@exactly/core"]).toBe("^0.1.0");

    await writeFile(
      join(app, "job.ts"),
      `import { GeneratorSource, StreamJob, silentLogger } from "@exactly/core";
import { localFileSink } from "@exactly/file";
const out: string = process.argv[2] ?? "";
const job = new StreamJob({ name: "app", checkpoint: { storage: out + "/.checkpoints", intervalMs: 50 }, logger: silentLogger });
job
  .fromSource(new GeneratorSource({ count: 5000, generate: (id: number) => ({ id }) }))
  .sinkTo(() => localFileSink<{ id: number }>({ directory: out }), { name: "files" });
const result = await job.execute();
console.log(JSON.stringify(result));
`,
    );
    // The declarations type-check a user's code against the installed packages.
    await typeCheck(app, "job.ts");
    const out = await mkdtemp(join(tmpdir(), "exactly-app-out-"));
    const { stdout } = await exec(process.execPath, ["--disable-warning=ExperimentalWarning", "job.ts", out], {
      cwd: app,
    });
    expect(JSON.parse(stdout).checkpointsCompleted).toBeGreaterThan(0);
    const ids = new Set<number>();
    for (const name of await readdir(out)) {
      if (name.startsWith(".")) continue;
      for (const line of (await readFile(join(out, name), "utf8")).split("\n")) if (line) ids.add(JSON.parse(line).id);
    }
    expect(ids.size).toBe(5000);

    // The CLI on top: `exactly demo` from the installed tarball, without the Kafka example.
    await exec(
      "npm",
      [
        "install",
        "--no-audit",
        "--no-fund",
        join(packs, "exactly-conformance-0.1.0.tgz"),
        join(packs, "exactly-cli-0.1.0.tgz"),
      ],
      { cwd: app },
    );
    const cli = JSON.parse(await readFile(join(app, "node_modules/@exactly/cli/package.json"), "utf8"));
    expect(Object.keys(cli.dependencies)).not.toContain("@exactly/example-kafka-window-sum");
    expect(existsSync(join(app, "node_modules/kafkajs"))).toBe(false); // a file-only user gets no Kafka client
    const demo = await exec(
      join(app, "node_modules/.bin/exactly"),
      ["demo", "--records", "20000", "--kills", "1", "--seed", "3", "--json"],
      {
        cwd: app,
      },
    );
    const summary = JSON.parse(demo.stdout.trim().split("\n").at(-1) as string);
    expect(summary).toMatchObject({ records: 20000, committed: 20000, lost: 0, duplicated: 0, kills: 1, ok: true });

    // docs/getting-started.md is this script: run as a new user would, in a fresh directory.
    const guide = await mkdtemp(join(tmpdir(), "exactly-getting-started-"));
    const started = await exec("bash", [join(root, "docs/getting-started/getting-started.sh")], {
      cwd: guide,
      env: {
        ...process.env,
        EXACTLY_PACKAGES: ["core", "file", "conformance", "cli"]
          .map((p) => join(packs, `exactly-${p}-0.1.0.tgz`))
          .join(" "),
      },
    });
    expect(started.stdout).toContain("orders written: 100000");
    expect(started.stdout).toMatch(/latest complete: \d+/);
    // The job shown in the guide type-checks against what the guide installs.
    await typeCheck(join(guide, "my-pipeline"), "job.ts");

    // `exactly demo --kafka` runs the Kafka example, which the CLI does not depend on: without it, it says how to install it.
    const { EXACTLY_KAFKA_BROKERS: _brokers, ...noBroker } = process.env;
    const kafkaDemo = () =>
      exec(join(app, "node_modules/.bin/exactly"), ["demo", "--kafka"], { cwd: app, env: noBroker }).catch(
        (error: { code: number; stderr: string }) => error,
      );
    expect(await kafkaDemo()).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(
        "runs the example @exactly/example-kafka-window-sum, which is not installed; " +
          "install it next to @exactly/cli: npm install @exactly/example-kafka-window-sum",
      ),
    });
    // With the example installed it loads it from its tarball; without a broker it says what to give.
    await exec(
      "npm",
      [
        "install",
        "--no-audit",
        "--no-fund",
        join(packs, "exactly-kafka-0.1.0.tgz"),
        join(packs, "exactly-example-kafka-window-sum-0.1.0.tgz"),
      ],
      { cwd: app },
    );
    expect(await kafkaDemo()).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("--brokers: give the Kafka bootstrap"),
    });

    // Core and the Postgres connector alone, in a project of their own: they bring pg, nothing else of ours.
    expect(
      await runAlone(packs, "postgres", {
        brings: "pg",
        without: "kafkajs",
        job: `import { DeliveryGuarantee } from "@exactly/core";
import { postgresSink } from "@exactly/postgres";
const create = postgresSink<{ id: number; name: string }>({
  connection: "postgres://localhost/none",
  guarantee: DeliveryGuarantee.EXACTLY_ONCE,
  exactlyOnce: "write-ahead",
  table: { table: "people", columns: [{ name: "id", type: "bigint" }, { name: "name", type: "text" }], write: { upsertOn: ["id"] } },
});
const sink = create();`,
      }),
    ).toEqual({
      guarantee: "EXACTLY_ONCE",
      capabilities: { rescale: true, abortsLingering: true, atomicCommits: true },
      kind: "PostgresWriteAheadSink",
    });

    // Core and the Redis connector alone: they bring ioredis, nothing else of ours.
    expect(
      await runAlone(packs, "redis", {
        brings: "ioredis",
        without: "pg",
        job: `import { RedisUpsertSink } from "@exactly/redis";
const sink = new RedisUpsertSink<{ id: number; name: string }>({
  connection: "redis://localhost:1",
  keyPrefix: "people:",
  key: (p) => String(p.id),
  version: (p) => p.id,
  value: { shape: "hash", fields: (p) => ({ name: p.name }) },
});`,
      }),
    ).toEqual({
      guarantee: "EXACTLY_ONCE",
      capabilities: { rescale: true, upserts: true },
      kind: "RedisUpsertSink",
    });

    // A user's own sink, in plain JavaScript, through `exactly conformance`.
    await writeFile(join(app, "my-sink.mjs"), USER_SINK_MODULE);
    const conformance = await exec(
      join(app, "node_modules/.bin/exactly"),
      ["conformance", "my-sink.mjs", "--only", "clean-run,crash-after-checkpoint-durable,crash-mid-write,rescale-down"],
      { cwd: app },
    );
    expect(conformance.stdout).toMatch(/crash-after-checkpoint-durable\s+passed/);
    expect(conformance.stdout).toContain("4 passed, 0 failed, 0 inconclusive, 0 skipped");
  });
});

/** What a user outside this repository writes: a two-phase-commit sink over a directory, and its definition. */
const USER_SINK_MODULE = `
import { link, mkdir, readdir, readFile, unlink, appendFile } from "node:fs/promises";
import { join } from "node:path";
import { DeliveryGuarantee, TwoPhaseCommitSink } from "@exactly/core";

const out = (dir) => join(dir, "out");
const ignore = (e) => { if (e.code !== "ENOENT" && e.code !== "EEXIST") throw e; };

class DirectorySink extends TwoPhaseCommitSink {
  constructor(dir) { super(); this.dir = dir; }
  async beginTransaction(ctx) {
    await mkdir(this.dir, { recursive: true });
    return { name: ctx.sinkId + "-" + ctx.subtask + "-" + ctx.checkpointId };
  }
  async write(txn, batch) {
    await appendFile(join(this.dir, "." + txn.name), batch.values.map((r) => r.id + "\\n").join(""));
  }
  async preCommit() {}
  async commit(txn) {
    await link(join(this.dir, "." + txn.name), join(this.dir, txn.name)).catch(ignore);
    await unlink(join(this.dir, "." + txn.name)).catch(ignore);
  }
  async abort(txn) { await unlink(join(this.dir, "." + txn.name)).catch(ignore); }
  async abortLingering(ctx) {
    const keep = new Set(ctx.referenced.map((t) => "." + t.name));
    for (const name of await readdir(this.dir).catch(() => [])) {
      const m = /^\\.(.+)-(\\d+)-(\\d+)$/.exec(name);
      if (m && m[1] === ctx.sinkId && ctx.ownsSubtaskIndex(Number(m[2])) && !keep.has(name)) await unlink(join(this.dir, name)).catch(ignore);
    }
  }
}

export const createSink = ({ scope }) => new DirectorySink(out(scope.dir));

export const definition = {
  name: "user directory sink",
  sinkModule: new URL(import.meta.url),
  guarantee: DeliveryGuarantee.EXACTLY_ONCE,
  lifecycle: "two-phase-commit",
  capabilities: { rescale: true },
  async readCommitted(scope) {
    const ids = [];
    for (const name of await readdir(out(scope.dir)).catch(() => [])) {
      if (name.startsWith(".")) continue;
      for (const line of (await readFile(join(out(scope.dir), name), "utf8")).split("\\n")) if (line) ids.push(Number(line));
    }
    return ids;
  },
  async probeLingering(scope) {
    return (await readdir(out(scope.dir)).catch(() => [])).filter((n) => n.startsWith("."));
  },
};
`;
