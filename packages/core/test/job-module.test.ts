// A job defined in a module: loadJob builds it from the module's export and remembers where
// it came from (what a worker thread will import again); wrong exports are named.
import { describe, expect, it } from "vitest";
import { ConfigurationError, GeneratorSource, loadJob, StreamJob, silentLogger } from "../src/index.ts";
import { claimInProcess, originOf, releaseInProcess } from "../src/internal.ts";
import { store } from "./fixtures/job-modules.ts";
import { MemorySink } from "./helpers.ts";

const fixture = new URL("./fixtures/job-modules.ts", import.meta.url);

describe("a job module", () => {
  it("builds the job from its default export with the runtime given, and the job runs", async () => {
    const job = await loadJob(fixture, { runtime: { logger: silentLogger } });
    expect(job.options.name).toBe("ids");
    expect(job.options.logger).toBe(silentLogger);
    expect(originOf(job)).toEqual({ url: fixture.href, export: "default", params: {} });
    await job.execute();
    expect(store.committed.map((r) => (r as { id: number }).id).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 1000 }, (_, i) => i),
    );
  });

  it("takes a path relative to the working directory as well as a URL", async () => {
    const job = await loadJob("packages/core/test/fixtures/job-modules.ts", { runtime: { logger: silentLogger } });
    expect(originOf(job)?.url).toBe(fixture.href);
  });

  it("has no origin when the job was built inline", () => {
    const job = new StreamJob({ name: "inline", checkpoint: { storage: "/tmp/unused" } });
    expect(originOf(job)).toBeUndefined();
  });

  it("names the export setting when the export is missing, not a function, or returns no StreamJob", async () => {
    for (const name of ["nothing", "notAFunction", "notAJob"]) {
      const error = await loadJob(fixture, { export: name }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).setting).toBe("export");
      expect((error as Error).message).toContain(name);
    }
  });

  it("refuses worker threads for a job built inline, naming workers and the fix", () => {
    const job = new StreamJob({ name: "inline", parallelism: 2, workers: 2, checkpoint: { storage: "/tmp/unused" } });
    job.fromSource(new GeneratorSource({ count: 10, generate: (id) => ({ id }) })).sinkTo(() => new MemorySink(store), {
      name: "memory",
    });
    const error = (() => {
      try {
        job.start();
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("workers");
    expect((error as Error).message).toContain("loadJob");
  });

  it("refuses a module that builds a different job in a worker thread than in the main thread", async () => {
    const job = await loadJob(fixture, { export: "unstable", runtime: { logger: silentLogger } });
    const error = await job.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).setting).toBe("workers");
    expect((error as Error).message).toContain("built a different job in worker");
  });

  it("answers process-wide claims in the main thread: two owners of one name on two worker threads are refused", async () => {
    const shared = await loadJob(fixture, {
      export: "claims",
      params: { shared: true, run: 1 },
      runtime: { logger: silentLogger },
    });
    expect(shared.workerThreads()).toBe(2);
    await shared.execute();
    // Every claim was released when the job ended: another owner may take the name now.
    expect(await claimInProcess("job-modules", "shared-name", { owner: "after", part: 0 })).toEqual({ granted: true });
    releaseInProcess("job-modules", "shared-name", 0);

    const twoOwners = await loadJob(fixture, {
      export: "claims",
      params: { shared: false, run: 2 },
      runtime: { logger: silentLogger },
    });
    const error = await twoOwners.execute().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigurationError);
    expect((error as Error).message).toMatch(/shared-name is held by claiming-[01]/);
  });
});
