// The Kafka sink's suite (EXACTLY_ONCE) with the job's subtasks on two worker threads (subtask
// i on thread i mod 2), beside the one-loop suite: the "threads" variant's scenarios
// (@exactly/testkit/variant-scenarios), every one in `pnpm test:full`.
import { conformanceSuite } from "@exactly/conformance";
import { DeliveryGuarantee } from "@exactly/core";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { variantScenarios } from "@exactly/testkit/variant-scenarios";
import { describe, it } from "vitest";
import { kafkaDefinition } from "./conformance/kafka-sink.conformance.ts";

const exactlyOnce = kafkaDefinition(kafkaBrokers(), DeliveryGuarantee.EXACTLY_ONCE);
conformanceSuite(
  { describe, it },
  { ...exactlyOnce, name: `${exactlyOnce.name} on two worker threads`, workers: 2 },
  { only: variantScenarios("threads") },
);
