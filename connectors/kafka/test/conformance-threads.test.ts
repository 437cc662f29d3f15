// The Kafka sink's suite (EXACTLY_ONCE) with the job's subtasks on two worker threads (subtask
// i on thread i mod 2), beside the one-loop suite: the "threads" variant's scenarios
// (test/support/variant-scenarios.ts), every one in `pnpm test:full`.
import { conformanceSuite } from "@exactly/conformance";
import { DeliveryGuarantee } from "@exactly/core";
import { describe, it } from "vitest";
import { kafkaBrokers } from "../../../test/services/endpoints.ts";
import { variantScenarios } from "../../../test/support/variant-scenarios.ts";
import { kafkaDefinition } from "./conformance/kafka-sink.conformance.ts";

const exactlyOnce = kafkaDefinition(kafkaBrokers(), DeliveryGuarantee.EXACTLY_ONCE);
conformanceSuite(
  { describe, it },
  { ...exactlyOnce, name: `${exactlyOnce.name} on two worker threads`, workers: 2 },
  { only: variantScenarios("threads") },
);
