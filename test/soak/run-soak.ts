/**
 * `pnpm soak`: thousands of seeded SIGKILLs against a built-in sink, not part of `pnpm test`.
 * It runs the conformance suite's chaos scenario in rounds of the "soak" profile (50 kills a
 * round, at random fault points, inside random sink calls, at random parallelisms), each
 * round checked by the conformance checker (lost, duplicated, lingering work), until the
 * kills asked for have landed. It prints kills by where they landed, and stops at the first
 * round that fails, with the seed that replays it:
 *
 *   pnpm soak --sink file --kills 1000 [--seed S]
 *   EXACTLY_CONFORMANCE_SEED=<seed> pnpm exec vitest run … -t chaos   (EXACTLY_CONFORMANCE=soak)
 *
 * The Kafka sink needs a broker: EXACTLY_KAFKA_BROKERS (`pnpm services up kafka`), and kcat:
 * each Kafka round's final read is also made by kcat (librdkafka, which shares no code with ours), and a round
 * whose kcat read differs from ours, or that kcat could not read, stops the soak.
 */
import { parseArgs } from "node:util";
import { readCommittedWithKcat } from "../../examples/kafka-window-sum/src/read-committed.ts";
import {
  type ConformanceDefinition,
  formatFailure,
  runSelected,
  type ScenarioResult,
  selectScenarios,
} from "../../packages/conformance/src/index.ts";
import { DeliveryGuarantee } from "../../packages/core/src/index.ts";

const { values } = parseArgs({
  options: {
    sink: { type: "string", default: "file" },
    kills: { type: "string", default: "1000" },
    seed: { type: "string" },
  },
});

async function definitionOf(sink: string): Promise<ConformanceDefinition> {
  if (sink === "file")
    return (await import("../../connectors/file/test/conformance/local-file-sink.conformance.ts")).definition;
  if (sink === "kafka") {
    const brokers = (process.env.EXACTLY_KAFKA_BROKERS ?? "").split(",").filter(Boolean);
    if (brokers.length === 0)
      throw new Error("--sink kafka: set EXACTLY_KAFKA_BROKERS (pnpm services up kafka; pnpm services env)");
    const { kafkaDefinition, topicOf } = await import(
      "../../connectors/kafka/test/conformance/kafka-sink.conformance.ts"
    );
    const base = kafkaDefinition(brokers, DeliveryGuarantee.EXACTLY_ONCE);
    const read = base.readCommitted as NonNullable<typeof base.readCommitted>;
    return {
      ...base,
      // The checker's final read, made twice: by ours and by kcat. They must agree.
      async readCommitted(scope, phase) {
        const ours = await read(scope, phase);
        if (phase !== "ended") return ours;
        const kcat = await readCommittedWithKcat(brokers, topicOf(scope));
        if (kcat.status !== "read") throw new Error(`kcat did not check the round (${kcat.status}): ${kcat.reason}`);
        const theirs = kcat.values.map(Number);
        const differ = differences(ours, theirs);
        if (differ) throw new Error(`kcat read otherwise than our reader: ${differ}`);
        kcatChecked++;
        return ours;
      },
    };
  }
  throw new Error(`--sink must be file or kafka, got ${sink}`);
}

/** How two reads of the same ids differ (count of each id), or undefined when they agree. */
function differences(ours: readonly number[], theirs: readonly number[]): string | undefined {
  const count = (ids: readonly number[]) => {
    const counts = new Map<number, number>();
    for (const id of ids) counts.set(id, (counts.get(id) ?? 0) + 1);
    return counts;
  };
  const a = count(ours);
  const b = count(theirs);
  const found: string[] = [];
  for (const id of new Set([...a.keys(), ...b.keys()])) {
    if (a.get(id) !== b.get(id)) found.push(`id ${id}: ours ${a.get(id) ?? 0}, kcat ${b.get(id) ?? 0}`);
    if (found.length >= 10) break;
  }
  return found.length > 0 ? found.join("; ") : undefined;
}

let kcatChecked = 0;
const wanted = Number(values.kills);
if (!Number.isInteger(wanted) || wanted < 1) throw new Error(`--kills must be a positive integer, got ${values.kills}`);
const firstSeed = values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(values.seed);
const definition = await definitionOf(values.sink as string);

const byPoint = new Map<string, number>();
let kills = 0;
let rounds = 0;
let lost = 0;
let duplicated = 0;
let lingering = 0;
const started = Date.now();
const report = (last: ScenarioResult | undefined) => {
  const points = [...byPoint].sort((a, b) => b[1] - a[1]);
  console.log(`\nsoak: ${definition.name}, first seed ${firstSeed}`);
  console.log(`kills ${kills} in ${rounds} rounds, ${((Date.now() - started) / 60_000).toFixed(1)} min`);
  for (const [point, n] of points) console.log(`  ${point.padEnd(28)} ${n}`);
  console.log(`lost ${lost}, duplicated ${duplicated}, lingering ${lingering}`);
  if (values.sink === "kafka") console.log(`rounds whose final read kcat made too, and agreed: ${kcatChecked}`);
  if (last) console.log(formatFailure(definition, last));
};

for (let seed = firstSeed; kills < wanted; seed++) {
  const [selected] = selectScenarios(definition, { profile: "soak", seed, only: ["chaos"] });
  if (!selected) throw new Error("the chaos scenario is not in the suite");
  let result: ScenarioResult;
  try {
    result = await runSelected(definition, selected, { profile: "soak", seed });
  } catch (error) {
    rounds++;
    report(undefined);
    console.log(
      `round ${rounds} (seed ${seed}) could not be checked: ${error instanceof Error ? error.message : String(error)}`,
    );
    process.exit(1);
  }
  rounds++;
  // Only a round that was checked counts its kills: an inconclusive one tested nothing.
  if (result.status === "passed") {
    for (const point of result.killsLanded ?? []) byPoint.set(point, (byPoint.get(point) ?? 0) + 1);
    kills += result.killsLanded?.length ?? 0;
  }
  lost += result.check?.lost.length ?? 0;
  duplicated += result.check?.duplicated.length ?? 0;
  lingering += result.check?.lingering.length ?? 0;
  console.log(
    `round ${rounds} (seed ${result.seed}): ${result.status}, ${result.killsLanded?.length ?? 0} kills landed, ${kills}/${wanted} checked`,
  );
  if (result.status === "failed" || result.status === "skipped") {
    report(result);
    process.exit(1);
  }
}
report(undefined);
