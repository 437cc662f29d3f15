import { conformanceSuite } from "@exactly/conformance";
import { describe, it } from "vitest";
import { definition } from "./conformance/local-file-sink.conformance.ts";

conformanceSuite({ describe, it }, definition);
// Every scenario again with the job's subtasks on two worker threads (subtask i on thread i mod 2).
conformanceSuite({ describe, it }, { ...definition, name: "local file sink on two worker threads", workers: 2 });
