// A correct sink on IdempotentSink passes the whole suite.
import { describe, it } from "vitest";
import { conformanceSuite } from "../../src/index.ts";
import { definition as idempotent } from "../fixtures/toy-idempotent-sink.ts";

conformanceSuite({ describe, it }, idempotent);
