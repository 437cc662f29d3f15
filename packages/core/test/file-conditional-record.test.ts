// FileConditionalRecord, the file-system store of a shard's lease and checkpoint head: the
// contract suite every conditional record runs, in one folder per test.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { conditionalRecordSuite } from "@exactly/testkit/conditional-record-suite";
import { FileConditionalRecord } from "../src/internal.ts";

const base = mkdtempSync(join(tmpdir(), "exactly-file-record-"));

conditionalRecordSuite("files", (location) => new FileConditionalRecord(join(base, location)));
