import { DeliveryGuarantee } from "@exactly/core";
import { describe, expect, it } from "vitest";
import {
  type ConformanceDefinition,
  conformanceSuite,
  runConformance,
  type ScenarioResult,
  selectScenarios,
  type TestRunner,
} from "../src/index.ts";
import { definition as idempotent } from "./fixtures/toy-idempotent-sink.ts";
import { type ToyOptions, toyDefinition } from "./fixtures/toy-sink.ts";

interface Registered {
  readonly name: string;
  readonly skipped: boolean;
  readonly body: () => Promise<void> | void;
}

/** Registers the suite into a runner that only records, so a test can run the suite's tests itself. */
function registerSuite(definition: ConformanceDefinition): Registered[] {
  const tests: Registered[] = [];
  const it = Object.assign(
    (name: string, body: (context: { skip(note?: string): void }) => Promise<void>) => {
      const skip = (note?: string) => {
        throw new Error(`skipped: ${note}`);
      };
      tests.push({ name, skipped: false, body: () => body({ skip }) });
    },
    {
      skip: (name: string, body: () => void) => {
        tests.push({ name, skipped: true, body });
      },
    },
  );
  const runner: TestRunner = { describe: (_name, body) => body(), it };
  conformanceSuite(runner, definition, { seed: 7, profile: "ci" });
  return tests;
}

/** The toy two-phase-commit sink, built to declare `declares` instead of what its base class declares. */
function toyDeclaring(
  name: string,
  declares: NonNullable<ToyOptions["declares"]>,
  claims: Pick<ConformanceDefinition, "guarantee" | "capabilities" | "lifecycle">,
): ConformanceDefinition<ToyOptions> {
  return { ...toyDefinition(), name, sinkOptions: { declares }, ...claims };
}

/** The suite fails first, with `says`, runs no scenario, and the CLI's path throws it before any scenario. */
async function expectSuiteFails(definition: ConformanceDefinition, says: RegExp): Promise<void> {
  const [first, ...rest] = registerSuite(definition);
  expect(first?.name).toBe("sink declarations");
  expect(first?.skipped).toBe(false);
  await expect(first?.body()).rejects.toThrow(says);
  expect(rest.length).toBeGreaterThan(0);
  expect(rest.filter((t) => !t.skipped).map((t) => t.name)).toEqual([]);
  expect(rest.every((t) => t.name.includes('not run: see the failed "sink declarations"'))).toBe(true);

  const ran: ScenarioResult[] = [];
  await expect(runConformance(definition, { seed: 7, only: ["clean-run"] }, (r) => ran.push(r))).rejects.toThrow(says);
  expect(ran).toEqual([]);
}

describe("the suite reads the sink's own declarations", () => {
  it.each([DeliveryGuarantee.AT_LEAST_ONCE, DeliveryGuarantee.NONE])(
    "a definition claiming EXACTLY_ONCE for a sink that declares %s fails the suite",
    async (declared) => {
      await expectSuiteFails(
        toyDeclaring(
          `toy sink declaring ${declared}`,
          { guarantee: declared, capabilities: { rescale: true, abortsLingering: true } },
          { guarantee: DeliveryGuarantee.EXACTLY_ONCE },
        ),
        new RegExp(
          `guarantee: the definition claims EXACTLY_ONCE, but the sink declares ${declared} \\(DeclaringToySink\\.guarantee\\)`,
        ),
      );
    },
  );

  it("a definition claiming rescale for a sink that does not declare it fails the suite", async () => {
    await expectSuiteFails(
      toyDeclaring(
        "toy sink without rescale",
        { guarantee: DeliveryGuarantee.EXACTLY_ONCE, capabilities: { abortsLingering: true } },
        { capabilities: { rescale: true } },
      ),
      /capabilities\.rescale: the definition claims true, but the sink does not declare it \(DeclaringToySink\.capabilities\.rescale is undefined\)/,
    );
  });

  it("the message names every field that disagrees, the sink and its module", async () => {
    const definition = toyDeclaring(
      "toy sink claiming too much",
      { guarantee: DeliveryGuarantee.AT_LEAST_ONCE, capabilities: {} },
      { guarantee: DeliveryGuarantee.EXACTLY_ONCE, capabilities: { rescale: true }, lifecycle: "write-ahead" },
    );
    const [first] = registerSuite(definition);
    const error = await Promise.resolve(first?.body()).catch((e: Error) => e);
    expect(String((error as Error).message)).toMatch(
      /^toy sink claiming too much: the definition disagrees with the sink its factory builds \(DeclaringToySink, from createSink in .*toy-sink\.ts\):\n {2}- guarantee: .*\n {2}- capabilities\.rescale: .*\n {2}- lifecycle: the definition states "write-ahead", but the sink \(DeclaringToySink\) extends TwoPhaseCommitSink, whose lifecycle is "two-phase-commit"\n/,
    );
  });

  it("a definition claiming less than its sink declares fails too: the suite tests what the sink promises", async () => {
    await expectSuiteFails(
      { ...toyDefinition(), guarantee: DeliveryGuarantee.AT_LEAST_ONCE },
      /guarantee: the definition claims AT_LEAST_ONCE, but the sink declares EXACTLY_ONCE/,
    );
    await expectSuiteFails(
      { ...toyDefinition(), capabilities: { rescale: false } },
      /capabilities\.rescale: the definition claims false, but the sink declares true/,
    );
  });

  it("a sink on no base class needs the definition's lifecycle", async () => {
    const plain: ConformanceDefinition = { ...toyDefinition(), name: "plain sink", sinkExport: "createPlainSink" };
    await expectSuiteFails(plain, /lifecycle: the sink \(Object\) extends none of TwoPhaseCommitSink/);
    const stated = selectScenarios({ ...plain, lifecycle: "idempotent" }, { seed: 7 });
    expect(stated.find((s) => s.plan.name === "crash-after-begin")?.skipReason).toBe(
      "an idempotent sink never reaches the after-begin fault point",
    );
  });

  it("a sink that cannot be built fails the suite first, saying so", async () => {
    await expectSuiteFails(
      { ...toyDefinition(), name: "missing export", sinkExport: "noSuchFactory" },
      /missing export: could not build a sink with noSuchFactory from .*toy-sink\.ts .*does not export a sink factory named noSuchFactory/,
    );
  });

  it("scenarios are planned from the sink's declarations when the definition states none", () => {
    const noRescale = toyDeclaring(
      "toy sink without rescale",
      { guarantee: DeliveryGuarantee.AT_LEAST_ONCE, capabilities: { abortsLingering: true } },
      {},
    );
    const selected = selectScenarios({ ...noRescale, transactionTimeoutMs: 1000 }, { seed: 7 });
    const skip = (name: string) => selected.find((s) => s.plan.name === name)?.skipReason;
    expect(skip("rescale-up")).toBe("the sink does not declare capabilities.rescale");
    expect(skip("rescale-down")).toBe("the sink does not declare capabilities.rescale");
    expect(skip("transaction-timeout")).toBe("only exactly-once sinks hold transactions");
    expect(selected.find((s) => s.plan.name === "chaos")?.plan.description).not.toContain("parallelisms");
    // No fences declared: not safe to run sharded, so the two shard scenarios do not apply.
    for (const name of ["zombie", "double-identity"])
      expect(skip(name)).toMatch(/does not declare capabilities\.fences: not safe to run sharded/);
    const fenced = toyDeclaring(
      "toy sink with fences",
      { guarantee: DeliveryGuarantee.EXACTLY_ONCE, capabilities: { rescale: true, fences: true } },
      {},
    );
    const withFences = selectScenarios(fenced, { seed: 7 });
    expect(withFences.find((s) => s.plan.name === "zombie")?.skipReason).toBeUndefined();
    expect(withFences.find((s) => s.plan.name === "double-identity")?.skipReason).toBeUndefined();

    // The lifecycle comes from the base class: IdempotentSink passes no transaction fault points.
    expect(idempotent.lifecycle).toBeUndefined();
    const idem = selectScenarios(idempotent, { seed: 7 });
    expect(idem.find((s) => s.plan.name === "crash-after-begin")?.skipReason).toBe(
      "an idempotent sink never reaches the after-begin fault point",
    );
    expect(idem.find((s) => s.plan.name === "rescale-up")?.skipReason).toBeUndefined();
  });

  it("a definition that states agreeing fields still passes the check, and the first test says what was read", () => {
    const tests = registerSuite({
      ...toyDefinition(),
      guarantee: DeliveryGuarantee.EXACTLY_ONCE,
      lifecycle: "two-phase-commit",
      capabilities: { rescale: true, abortsLingering: true, atomicCommits: true },
    });
    expect(tests[0]?.name).toBe(
      "sink declarations (ToySink: EXACTLY_ONCE, two-phase-commit, capabilities rescale abortsLingering atomicCommits fences)",
    );
    expect(tests.slice(1).map((t) => t.name)).toContain("crash-after-begin");
    expect(tests.filter((t) => t.skipped).map((t) => t.name)).toEqual([
      "transaction-timeout (skipped: the sink's external system has no transaction timeout (transactionTimeoutMs))",
    ]);
  });
});
