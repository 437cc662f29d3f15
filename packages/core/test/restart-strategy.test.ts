import { describe, expect, it } from "vitest";
import {
  ArraySource,
  CommitFailedError,
  ConfigurationError,
  ExactlyError,
  JobFailedError,
  RecordWriteError,
  StreamJob,
  silentLogger,
  TransactionLostError,
  TransientError,
} from "../src/index.ts";
import { classifyFailure, RestartBackoff } from "../src/internal.ts";
import { MemorySink, MemoryStore, tempDir } from "./helpers.ts";

const refused = () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9092"), { code: "ECONNREFUSED" });

describe("classifying a failed attempt", () => {
  it("a network error anywhere in the cause chain is transient, even under a record write or a commit", () => {
    expect(classifyFailure(refused(), [])).toBe("transient");
    expect(classifyFailure(new CommitFailedError(3, refused()), [])).toBe("transient");
    expect(classifyFailure(new RecordWriteError(undefined, refused()), [])).toBe("transient");
    expect(classifyFailure(new AggregateError([new Error("x"), refused()]), [])).toBe("transient");
  });

  it("the sinks' and sources' own classifiers recognise their clients' errors", () => {
    const loading = Object.assign(new Error("the database system is shutting down"), { sqlstate: "57P01" });
    const byServerState = (e: unknown) => (e as { sqlstate?: string }).sqlstate === "57P01";
    expect(classifyFailure(loading, [])).toBe("other");
    expect(classifyFailure(loading, [byServerState])).toBe("transient");
    expect(
      classifyFailure(new Error("x"), [
        () => {
          throw new Error("a classifier that throws is a no");
        },
      ]),
    ).toBe("other");
  });

  it("settings, lost transactions and records that cannot be written are permanent", () => {
    expect(classifyFailure(new ConfigurationError("x", "y"), [])).toBe("permanent");
    expect(classifyFailure(new TransactionLostError(4, "aborted by the server"), [])).toBe("permanent");
    // A lost transaction stays lost, whatever error reported it.
    expect(classifyFailure(new TransactionLostError(4, "gone", { cause: refused() }), [])).toBe("permanent");
    expect(classifyFailure(new RecordWriteError(undefined, new Error("violates check")), [])).toBe("permanent");
    expect(classifyFailure(new Error("something else"), [])).toBe("other");
  });

  it("a connector's error that says no restart gets past it is permanent, even with a transient cause", () => {
    class GoneError extends ExactlyError {
      override readonly permanent = true;
    }
    expect(classifyFailure(new GoneError("GONE", "the records at the checkpointed offset were deleted"), [])).toBe(
      "permanent",
    );
    expect(classifyFailure(new GoneError("GONE", "deleted", { cause: refused() }), [])).toBe("permanent");
    expect(classifyFailure(new ExactlyError("OTHER", "not marked"), [])).toBe("other");
  });

  it("the job's own classification comes first", () => {
    expect(classifyFailure(refused(), [], () => "permanent")).toBe("permanent");
    expect(classifyFailure(new Error("odd"), [], () => undefined)).toBe("other");
  });
});

describe("restart backoff", () => {
  it("restarts transient failures however often they repeat, the delay growing to its bound", () => {
    const backoff = new RestartBackoff({ initialDelayMs: 100, maxDelayMs: 1000, jitter: 0 });
    const delays = Array.from({ length: 50 }, () => {
      const decision = backoff.onFailure("transient");
      if (!decision.restart) throw new Error(decision.reason);
      return decision.delayMs;
    });
    expect(delays.slice(0, 6)).toEqual([100, 200, 400, 800, 1000, 1000]);
    expect(Math.max(...delays)).toBe(1000);
  });

  it("jitter moves each delay by at most its fraction, and never past maxDelayMs", () => {
    const low = new RestartBackoff({ initialDelayMs: 1000, maxDelayMs: 1050, jitter: 0.2 }, () => 0);
    const high = new RestartBackoff({ initialDelayMs: 1000, maxDelayMs: 1050, jitter: 0.2 }, () => 1);
    expect(low.onFailure("transient")).toMatchObject({ delayMs: 800 });
    expect(high.onFailure("transient")).toMatchObject({ delayMs: 1050 });
  });

  it("other failures stop after maxRestartsWithoutProgress in a row; a completed checkpoint starts the count again", () => {
    const backoff = new RestartBackoff({ maxRestartsWithoutProgress: 2, jitter: 0 });
    expect(backoff.onFailure("other").restart).toBe(true);
    expect(backoff.onFailure("other").restart).toBe(true);
    backoff.progressed();
    expect(backoff.onFailure("other").restart).toBe(true);
    expect(backoff.onFailure("transient").restart).toBe(true);
    expect(backoff.onFailure("other").restart).toBe(true);
    const last = backoff.onFailure("other");
    expect(last.restart).toBe(false);
    expect(!last.restart && last.reason).toContain("maxRestartsWithoutProgress 2");
  });

  it("permanent failures stop at once; maxRestarts caps every kind", () => {
    expect(new RestartBackoff({}).onFailure("permanent").restart).toBe(false);
    const capped = new RestartBackoff({ maxRestarts: 1 });
    expect(capped.onFailure("transient").restart).toBe(true);
    expect(capped.onFailure("transient").restart).toBe(false);
  });
});

describe("the job's restart strategy", () => {
  /** Fails its first `failures` attempts at open, with the error `make` builds. */
  function flakyOpenSink(state: { failures: number }, make: () => unknown, transient?: boolean) {
    return class extends MemorySink<number> {
      override async open(context: Parameters<MemorySink<number>["open"]>[0]): Promise<void> {
        if (state.failures > 0) {
          state.failures--;
          throw make();
        }
        await super.open(context);
      }
      override isTransient(error: unknown): boolean {
        return transient === true && error instanceof Error && error.message === "server restarting";
      }
    };
  }

  async function run(Sink: new (store: MemoryStore) => MemorySink<number>, store: MemoryStore) {
    const job = new StreamJob({
      name: "restarts",
      checkpoint: { storage: await tempDir(), intervalMs: 50 },
      restart: { initialDelayMs: 1, maxDelayMs: 2 },
      logger: silentLogger,
    });
    job
      .fromSource(
        new ArraySource(
          Array.from({ length: 100 }, (_, i) => i),
          { name: "numbers" },
        ),
      )
      .sinkTo(() => new Sink(store), { name: "mem" });
    return job.execute();
  }

  it("rides through 25 transient failures in a row (more than any bound on other failures) and ends exactly once", async () => {
    const store = new MemoryStore();
    const state = { failures: 25 };
    const Sink = flakyOpenSink(state, () => new Error("server restarting"), true);
    const result = await run(Sink, store);
    expect(result.restarts).toBe(25);
    expect([...store.committed].sort((a, b) => (a as number) - (b as number))).toEqual(
      Array.from({ length: 100 }, (_, i) => i),
    );
  });

  it("gives up on an unclassified failure after 10 restarts without progress, naming why", async () => {
    const store = new MemoryStore();
    const state = { failures: 1000 };
    const Sink = flakyOpenSink(state, () => new Error("server restarting"), false);
    const error = await run(Sink, store).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobFailedError);
    expect((error as JobFailedError).attempts).toBe(11);
    expect((error as JobFailedError).reason).toContain("without a completed checkpoint");
  });

  it("fails at the first permanent failure, with that failure as the cause", async () => {
    const store = new MemoryStore();
    const state = { failures: 1000 };
    const Sink = flakyOpenSink(state, () => new TransactionLostError(7, "aborted by its timeout"));
    const error = await run(Sink, store).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobFailedError);
    expect((error as JobFailedError).attempts).toBe(1);
    expect((error as JobFailedError).cause).toBeInstanceOf(TransactionLostError);
    expect(state.failures).toBe(999);
  });

  it("a TransientError thrown by a sink needs no classifier", async () => {
    const store = new MemoryStore();
    const state = { failures: 15 };
    const Sink = flakyOpenSink(state, () => new TransientError("broker not available"));
    const result = await run(Sink, store);
    expect(result.restarts).toBe(15);
  });
});
