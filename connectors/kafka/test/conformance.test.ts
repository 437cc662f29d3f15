// One file per sink, so the suites run side by side in CI's workers.
import { conformanceSuite } from "@exactly/conformance";
import { DeliveryGuarantee } from "@exactly/core";
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { describe, it } from "vitest";
import { kafkaDefinition } from "./conformance/kafka-sink.conformance.ts";

conformanceSuite({ describe, it }, kafkaDefinition(kafkaBrokers(), DeliveryGuarantee.EXACTLY_ONCE));
