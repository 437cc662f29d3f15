// SASL through the connector's options, against the broker's SCRAM-SHA-256 listener: a user
// made for this test (AlterUserScramCredentials), an exactly-once job writing through it and
// the source reading it back through it; the same user with a wrong password is refused, and
// the refusal does not carry the password.

import { pbkdf2Sync, randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { ConfigurationError } from "@exactly/core";
import { kafkaBrokers, kafkaScramBrokers } from "@exactly/testkit/endpoints";
import { idCounts, uniqueName } from "@exactly/testkit/ids";
import { Admin, alterUserScramCredentialsV0 } from "@platformatic/kafka";
import { describe, expect, it } from "vitest";
import type { KafkaSaslOptions } from "../src/index.ts";
import { isTransientKafkaFailure } from "../src/kafka-errors.ts";
import { openKafkaConnection } from "../src/open-connection.ts";
import {
  createTopic,
  exactlyOnceReport,
  newKafka,
  partitionEnds,
  readCommitted,
  readWithSource,
  writeIds,
} from "./helpers.ts";

const RECORDS = 5000;
const PARTITIONS = 2;
/** Kafka's ScramMechanism id of SCRAM-SHA-256. */
const SCRAM_SHA_256 = 1;
const ITERATIONS = 4096;

/** Creates (or replaces) a SCRAM-SHA-256 user, through the plaintext listener. */
async function createScramUser(username: string, password: string): Promise<void> {
  const salt = randomBytes(16);
  const saltedPassword = pbkdf2Sync(password, salt, ITERATIONS, 32, "sha256");
  const admin = new Admin({ clientId: "exactly-auth-test", bootstrapBrokers: kafkaBrokers() });
  try {
    const [broker] = (await admin.connectToBrokers()).values();
    if (!broker) throw new Error("no broker to create the SCRAM user on");
    const answer = await alterUserScramCredentialsV0.api.async(
      broker,
      [],
      [{ name: username, mechanism: SCRAM_SHA_256, iterations: ITERATIONS, salt, saltedPassword }],
    );
    const failed = answer.results.filter((r) => r.errorCode !== 0);
    if (failed.length > 0) throw new Error(`AlterUserScramCredentials: ${JSON.stringify(failed)}`);
  } finally {
    await admin.close();
  }
}

/** Waits until the new user can authenticate (the credential reaches the listener asynchronously). */
async function untilAuthenticates(sasl: KafkaSaslOptions): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const connection = openKafkaConnection({ brokers: kafkaScramBrokers(), sasl });
    try {
      await connection.connect();
      return;
    } catch (error) {
      if (attempt >= 40) throw error;
      await sleep(250);
    } finally {
      await connection.close();
    }
  }
}

describe("SASL/SCRAM", () => {
  it("an exactly-once job writes through a SCRAM-SHA-256 listener and the source reads it back through it; a wrong password fails as a ConfigurationError naming sasl, without showing it", async () => {
    const username = uniqueName("scram-user");
    const password = `pw-${randomBytes(12).toString("hex")}`;
    await createScramUser(username, password);
    const sasl: KafkaSaslOptions = { mechanism: "SCRAM-SHA-256", username, password };
    await untilAuthenticates(sasl);

    const topic = uniqueName("auth");
    await createTopic(newKafka(kafkaBrokers()), topic, PARTITIONS);
    await writeIds(topic, RECORDS, { brokers: kafkaScramBrokers(), sasl }, { splits: 2 });
    const report = exactlyOnceReport(idCounts(await readCommitted(topic, PARTITIONS)), RECORDS);
    expect(report).toEqual({ lost: [], duplicated: [], phantom: [] });
    for (const end of await partitionEnds(topic, PARTITIONS)) expect(end.lastStableOffset).toBe(end.highWatermark);

    // The source, through the same listener and user.
    expect((await readWithSource(topic, { brokers: kafkaScramBrokers(), sasl })).length).toBe(RECORDS);

    // The wrong password: refused as a ConfigurationError naming `sasl`, which no restart
    // retries (a restart would meet the same refusal), and nothing in it shows a password.
    const wrong = `wrong-${randomBytes(12).toString("hex")}`;
    const refused = openKafkaConnection({ brokers: kafkaScramBrokers(), sasl: { ...sasl, password: wrong } });
    const error = await refused.connect().then(
      () => undefined,
      (e: unknown) => e,
    );
    await refused.close();
    expect(error, "a wrong password was accepted").toBeInstanceOf(ConfigurationError);
    expect((error as ConfigurationError).message).toMatch(/^sasl: /);
    expect(isTransientKafkaFailure(error), "a refused password is retried as transient").toBe(false);
    const shown = JSON.stringify(error, Object.getOwnPropertyNames(error)) + String((error as Error).stack);
    expect(shown).not.toContain(wrong);
    expect(shown).not.toContain(password);
  });
});
