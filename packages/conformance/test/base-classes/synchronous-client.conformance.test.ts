// A sink on a synchronous client (node:sqlite), the guide's example: killed inside its calls
// between two statements, it passes every scenario with no skip.
import { describe, it } from "vitest";
import { definition as sqlite } from "../../../../examples/sqlite-sink/src/sqlite-sink.ts";
import { conformanceSuite } from "../../src/index.ts";

conformanceSuite({ describe, it }, sqlite);
