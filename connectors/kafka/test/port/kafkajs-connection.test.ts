// The kafkajs adapter of the KafkaConnection port, through the port's contract suite.
import { kafkaBrokers } from "@exactly/testkit/endpoints";
import { openKafkajsConnection } from "../../src/kafkajs/kafkajs-connection.ts";
import { createTopic, newKafka } from "../helpers.ts";
import { kafkaConnectionSuite } from "./connection-suite.ts";

const kafka = newKafka(kafkaBrokers());

kafkaConnectionSuite("kafkajs", {
  open: (use) => openKafkajsConnection({ brokers: kafkaBrokers() }, use),
  createTopic: (topic, partitions) => createTopic(kafka, topic, partitions),
});
