import { conformanceSuite } from "@exactly/conformance";
import { DeliveryGuarantee } from "@exactly/core";
import { describe, it } from "vitest";
import { kafkaBrokers } from "../../../test/services/endpoints.ts";
import { kafkaDefinition } from "./conformance/kafka-sink.conformance.ts";

conformanceSuite({ describe, it }, kafkaDefinition(kafkaBrokers(), DeliveryGuarantee.EXACTLY_ONCE));
conformanceSuite({ describe, it }, kafkaDefinition(kafkaBrokers(), DeliveryGuarantee.AT_LEAST_ONCE));
// Every scenario again with the job's subtasks on two worker threads (subtask i on thread i mod 2).
const exactlyOnce = kafkaDefinition(kafkaBrokers(), DeliveryGuarantee.EXACTLY_ONCE);
conformanceSuite({ describe, it }, { ...exactlyOnce, name: `${exactlyOnce.name} on two worker threads`, workers: 2 });
