import { describe, expect, it } from "vitest";
import { kafkaBrokers } from "../../../test/services/endpoints.ts";
import { runWindowSum } from "../src/run-window-sum.ts";

describe("example: Kafka window sum", () => {
  it("is exactly once under SIGKILLs, for our reader and for kcat (read_committed)", async () => {
    const result = await runWindowSum({ brokers: kafkaBrokers(), events: 20_000, kills: 3, seed: 5 });
    // A run can finish before its fault point, so fewer kills than asked may land; one always does.
    expect(result.kills).toBeGreaterThanOrEqual(1);
    expect(result.windows).toBe(1000);
    expect(result.mismatches).toEqual([]);
    expect(result.kcatMismatches).toEqual([]);
  });
});
