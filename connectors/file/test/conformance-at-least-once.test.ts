// One file per sink class, so the suites run side by side in CI's workers.
import { conformanceSuite } from "@exactly/conformance";
import { describe, it } from "vitest";
import { atLeastOnceDefinition } from "./conformance/local-file-sink.conformance.ts";

conformanceSuite({ describe, it }, atLeastOnceDefinition);
