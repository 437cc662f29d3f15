import { conformanceSuite } from "@exactly/conformance";
import { describe, it } from "vitest";
import { definition } from "./conformance/local-file-sink.conformance.ts";

conformanceSuite({ describe, it }, definition);
