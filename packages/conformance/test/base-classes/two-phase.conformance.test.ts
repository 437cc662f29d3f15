// Correct sinks on each base class pass the whole suite: the bases' lifecycles hold. One file
// per sink, so the suites run side by side in CI's workers.

import { variantScenarios } from "@exactly/testkit/variant-scenarios";
import { describe, it } from "vitest";
import { conformanceSuite } from "../../src/index.ts";
import { toyDefinition } from "../fixtures/toy-sink.ts";

conformanceSuite({ describe, it }, toyDefinition());
// The same sink over a system that expires transactions after 8 s: transaction-timeout runs.
conformanceSuite({ describe, it }, toyDefinition(undefined, 8000), { only: variantScenarios("transaction-timeout") });
