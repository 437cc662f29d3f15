import { describe, it } from "vitest";
import { conformanceSuite } from "../src/index.ts";
import { definition as ledger } from "./fixtures/ledger-sink.ts";
import { definition as idempotent } from "./fixtures/toy-idempotent-sink.ts";
import { toyDefinition } from "./fixtures/toy-sink.ts";
import { definition as sqlite } from "./fixtures/toy-sqlite-sink.ts";
import { definition as writeAhead } from "./fixtures/toy-write-ahead-sink.ts";

// Correct sinks on each base class pass the whole suite: the bases' lifecycles hold.
conformanceSuite({ describe, it }, toyDefinition());
// The same sink over a system that expires transactions after 8 s: transaction-timeout runs.
conformanceSuite({ describe, it }, toyDefinition(undefined, 8000));
conformanceSuite({ describe, it }, writeAhead);
conformanceSuite({ describe, it }, idempotent);
// The README's example sink: what the README teaches passes the suite.
conformanceSuite({ describe, it }, ledger);
// A sink on a synchronous client (node:sqlite), the guide's example: killed inside its calls
// between two statements, it passes every scenario with no skip.
conformanceSuite({ describe, it }, sqlite);
