// A correct sink on GenericWriteAheadSink passes the whole suite.
import { describe, it } from "vitest";
import { conformanceSuite } from "../../src/index.ts";
import { definition as writeAhead } from "../fixtures/toy-write-ahead-sink.ts";

conformanceSuite({ describe, it }, writeAhead);
