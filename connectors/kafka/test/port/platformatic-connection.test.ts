// The @platformatic/kafka adapter of the KafkaConnection port, through the port's contract suite.
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { openPlatformaticConnection } from "../../src/platformatic/platformatic-connection.ts";
import { createTopic, newKafka } from "../helpers.ts";
import { kafkaConnectionSuite } from "./connection-suite.ts";

const kafka = newKafka(kafkaBrokers());

kafkaConnectionSuite("@platformatic/kafka", {
  open: (use) => openPlatformaticConnection({ brokers: kafkaBrokers() }, use),
  createTopic: (topic, partitions) => createTopic(kafka, topic, partitions),
});
