import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readdir, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fencedBlocks } from "./fixtures/guide-blocks.ts";
import {
  bin,
  exec,
  freshProject,
  npmInstall,
  packWorkspace,
  root,
  runTypeScript,
  tarball,
  typeCheck,
} from "./fixtures/packed-packages.ts";

/**
 * Runs docs/getting-started.md in a fresh folder: its first `sh` block (build and pack, in a
 * clone of the repository) is what `packWorkspace` did already, so the tarballs of the
 * packages it lists are put where it leaves them, `exactly-packs` next to the clone; every
 * later block runs as written, in order, in one shell, a block headed with a file name
 * (```ts job.ts) saved as that file where the shell is. Returns what the shell printed, and
 * the folder it ended in: the user's project, with the TypeScript npm gives today.
 */
async function followGettingStarted(packs: string): Promise<{ stdout: string; project: string }> {
  const blocks = fencedBlocks(await readFile(join(root, "docs/getting-started.md"), "utf8"));
  const [pack, ...rest] = blocks.filter((b) => b.lang === "sh" || b.meta !== "");
  expect(pack?.code).toContain("pnpm pack --pack-destination ../../../exactly-packs");
  const listed = /for p in ([^;]+); do/.exec(pack?.code ?? "")?.[1]?.split(" ") ?? [];
  expect(listed).toContain("packages/cli");
  const folder = await mkdtemp(join(tmpdir(), "exactly-getting-started-"));
  await mkdir(join(folder, "exactly-packs"));
  for (const dir of listed) {
    const name = dir.split("/").at(-1) as string;
    await copyFile(tarball(packs, name), join(folder, "exactly-packs", `exactly-${name}-0.1.0.tgz`));
  }
  const script = rest
    .map((b) => (b.lang === "sh" ? b.code : `cat > ${b.meta} <<'GETTING_STARTED_EOF'\n${b.code}GETTING_STARTED_EOF\n`))
    .join("\n");
  const { stdout } = await exec("bash", ["-euo", "pipefail", "-c", `${script}\necho "ended in $PWD"`], {
    cwd: folder,
    maxBuffer: 16 * 1024 * 1024,
  });
  return { stdout, project: (/^ended in (.+)$/m.exec(stdout) as RegExpExecArray)[1] as string };
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
    const packs = await packWorkspace(packages);
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
    for (const name of tarballs) {
      const checked = await exec(bin("attw"), ["--profile", "esm-only", "--format", "ascii", join(packs, name)]).catch(
        (error: { code: number; stdout: string }) => error,
      );
      expect((checked as { code?: number }).code ?? 0, `${name}: ${(checked as { stdout: string }).stdout}`).toBe(0);
    }

    // Core and the file connector alone: what a user who writes one job installs.
    const app = await freshProject("app", [tarball(packs, "core"), tarball(packs, "file")]);
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
    const stdout = await runTypeScript(app, "job.ts", [out]);
    expect(JSON.parse(stdout).checkpointsCompleted).toBeGreaterThan(0);
    const ids = new Set<number>();
    for (const name of await readdir(out)) {
      if (name.startsWith(".")) continue;
      for (const line of (await readFile(join(out, name), "utf8")).split("\n")) if (line) ids.add(JSON.parse(line).id);
    }
    expect(ids.size).toBe(5000);

    // The CLI on top: `exactly demo` from the installed tarball, without the Kafka example.
    await npmInstall(app, [tarball(packs, "conformance"), tarball(packs, "cli")]);
    const cli = JSON.parse(await readFile(join(app, "node_modules/@exactly/cli/package.json"), "utf8"));
    expect(Object.keys(cli.dependencies)).not.toContain("@exactly/example-kafka-window-sum");
    expect(existsSync(join(app, "node_modules/@platformatic/kafka"))).toBe(false); // a file-only user gets no Kafka client
    const demo = await exec(
      join(app, "node_modules/.bin/exactly"),
      ["demo", "--records", "20000", "--kills", "1", "--seed", "3", "--json"],
      {
        cwd: app,
      },
    );
    const summary = JSON.parse(demo.stdout.trim().split("\n").at(-1) as string);
    expect(summary).toMatchObject({ records: 20000, committed: 20000, lost: 0, duplicated: 0, kills: 1, ok: true });

    // docs/getting-started.md as a new user follows it, in a fresh folder outside the workspace.
    const { stdout: started, project } = await followGettingStarted(packs);
    expect(started).toMatch(/^\s*100000$/m); // cat out/*.jsonl | wc -l
    expect(started).toMatch(/latest complete: \d+ \(a restart restores it; every sink committed it\)/);
    expect(started).toMatch(/complete, final, committed/);
    // The code of the conformance and operating guides type-checks there too, with that
    // TypeScript and the tsconfig.json the guide gives (tsc checks every .ts file of the folder).
    for (const file of [
      "conformance/directory-sink.conformance.ts",
      "operating/job-module.ts",
      "operating/own-metrics.ts",
    ]) {
      await copyFile(join(root, "docs", file), join(project, file.split("/").at(-1) as string));
    }
    await exec("npx", ["tsc"], { cwd: project });

    // `exactly demo --kafka` runs the Kafka example, which the CLI does not depend on and which
    // is on no registry: without it, it says how to get it from a clone.
    const { EXACTLY_KAFKA_BROKERS: _brokers, ...noBroker } = process.env;
    const kafkaDemo = () =>
      exec(join(app, "node_modules/.bin/exactly"), ["demo", "--kafka"], { cwd: app, env: noBroker }).catch(
        (error: { code: number; stderr: string }) => error,
      );
    expect(await kafkaDemo()).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(
        "runs the example @exactly/example-kafka-window-sum, which is not installed and not on npm: " +
          "in a clone of the repository, pack examples/kafka-window-sum and connectors/kafka",
      ),
    });
    // With the example installed it loads it from its tarball; without a broker it says what to give.
    await npmInstall(app, [tarball(packs, "kafka"), tarball(packs, "example-kafka-window-sum")]);
    expect(await kafkaDemo()).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("--brokers: give the Kafka bootstrap"),
    });

    // A user's own sink, the conformance guide's example, through `exactly conformance` with Node's type stripping.
    const userSink = "directory-sink.conformance.ts";
    await copyFile(join(root, "docs/conformance", userSink), join(app, userSink));
    await typeCheck(app, userSink);
    const conformance = await exec(
      join(app, "node_modules/.bin/exactly"),
      ["conformance", userSink, "--only", "clean-run,crash-after-checkpoint-durable,crash-mid-write,rescale-down"],
      { cwd: app },
    );
    expect(conformance.stdout).toMatch(/crash-after-checkpoint-durable\s+passed/);
    expect(conformance.stdout).toContain("4 passed, 0 failed, 0 inconclusive, 0 skipped");

    // The sink guide's SQLite sink, the file as the guide shows it, sharded on two threads.
    const guide = await readFile(join(root, "docs/writing-a-sink.md"), "utf8");
    const sqliteSink = fencedBlocks(guide).find((b) => b.meta === "sqlite-sink.ts");
    expect(sqliteSink, "docs/writing-a-sink.md shows sqlite-sink.ts whole").toBeDefined();
    await writeFile(join(app, "sqlite-sink.ts"), sqliteSink?.code ?? "");
    await typeCheck(app, "sqlite-sink.ts");
    const sqlite = await exec(
      join(app, "node_modules/.bin/exactly"),
      ["conformance", "sqlite-sink.ts", "--only", "clean-run,zombie", "--workers", "2"],
      { cwd: app },
    );
    expect(sqlite.stdout).toMatch(/zombie\s+passed/);
    expect(sqlite.stdout).toContain("2 passed, 0 failed, 0 inconclusive, 0 skipped");
  });
});
