// The README's example sink: what the README teaches passes the suite.
import { describe, it } from "vitest";
import { conformanceSuite } from "../../src/index.ts";
import { definition as ledger } from "../fixtures/ledger-sink.ts";

conformanceSuite({ describe, it }, ledger);
