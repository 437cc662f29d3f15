// A sink on a synchronous client (node:sqlite), the guide's example: killed inside its calls
// between two statements, it passes every scenario with no skip.
import { describe, it } from "vitest";
import { conformanceSuite } from "../../src/index.ts";
import { definition as sqlite } from "../fixtures/toy-sqlite-sink.ts";

conformanceSuite({ describe, it }, sqlite);
