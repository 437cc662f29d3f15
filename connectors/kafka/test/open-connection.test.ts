// Which client a connection runs on (src/open-connection.ts): the settings it refuses by name,
// before any broker is asked.
import { ConfigurationError } from "@exactly/core";
import kafkajs from "kafkajs";
import { describe, expect, it } from "vitest";
import { type KafkaAdapter, openKafkaConnection } from "../src/open-connection.ts";

describe("openKafkaConnection", () => {
  it("refuses an adapter it does not know, and a kafkajs client given to @platformatic/kafka, naming the setting", () => {
    const unknown = () => openKafkaConnection({ brokers: ["127.0.0.1:1"], adapter: "librdkafka" as KafkaAdapter });
    expect(unknown).toThrow(ConfigurationError);
    expect(unknown).toThrow(/adapter/);
    const client = new kafkajs.Kafka({ brokers: ["127.0.0.1:1"], logLevel: kafkajs.logLevel.NOTHING });
    const mixed = () => openKafkaConnection({ client, adapter: "@platformatic/kafka" });
    expect(mixed).toThrow(ConfigurationError);
    expect(mixed).toThrow(/client/);
  });
});
