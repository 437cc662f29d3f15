/**
 * The finder of each `exactly lingering` subcommand, from its flags. Each connector is an
 * optional peer of the CLI, loaded only by the subcommand that needs it.
 */
import { ConfigurationError, type LingeringWorkFinder } from "@exactly/core";
import type * as FileConnector from "@exactly/file";
import type * as KafkaConnector from "@exactly/kafka";
import type * as PostgresConnector from "@exactly/postgres";
import { loadConnector } from "../load-connector.ts";
import { loadS3Connector, s3ConnectionFromEnv, withS3CredentialsHint } from "../s3-connection.ts";
import { addressOf, checkAnyServer } from "../server-check.ts";

function required(flag: string, value: string | undefined, what: string): string {
  if (!value) throw new ConfigurationError(flag, `is required: ${what}`);
  return value;
}

export async function kafkaFinder(flags: { brokers?: string; prefix?: string }): Promise<LingeringWorkFinder> {
  const brokers = (flags.brokers ?? process.env.EXACTLY_KAFKA_BROKERS ?? "").split(",").filter(Boolean);
  if (brokers.length === 0) throw new ConfigurationError("--brokers", "is required (or $EXACTLY_KAFKA_BROKERS)");
  const prefix = required("--prefix", flags.prefix, "the sink's transactionalIdPrefix");
  await checkAnyServer(
    "--brokers (or $EXACTLY_KAFKA_BROKERS)",
    "a Kafka broker",
    brokers.map((broker) => addressOf(broker, 9092)),
  );
  const kafka = await loadConnector<typeof KafkaConnector>("@exactly/kafka", "exactly lingering kafka");
  return new kafka.KafkaLingeringTransactions({ brokers, transactionalIdPrefix: prefix });
}

export async function postgresFinder(flags: { pgUrl?: string; sink?: string }): Promise<LingeringWorkFinder> {
  const url = required("--pg-url", flags.pgUrl ?? process.env.EXACTLY_PG_URL, "the database (or $EXACTLY_PG_URL)");
  const sinkName = required("--sink", flags.sink, "the sink's name in the database");
  await checkAnyServer("--pg-url (or $EXACTLY_PG_URL)", "the Postgres server", [addressOf(url, 5432)]);
  const postgres = await loadConnector<typeof PostgresConnector>("@exactly/postgres", "exactly lingering postgres");
  return new postgres.PostgresLingeringTransactions({ connection: url, sinkName });
}

export async function s3Finder(flags: {
  bucket?: string;
  prefix?: string;
  s3Endpoint?: string;
}): Promise<LingeringWorkFinder> {
  const bucket = required("--bucket", flags.bucket, "the sink's bucket");
  const connection = s3ConnectionFromEnv(flags.s3Endpoint);
  if (connection.endpoint) {
    await checkAnyServer("--s3-endpoint (or $EXACTLY_S3_ENDPOINT)", "the S3 server", [
      addressOf(connection.endpoint, 443),
    ]);
  }
  const s3 = await loadS3Connector("exactly lingering s3");
  const uploads = new s3.S3LingeringUploads({ bucket, prefix: flags.prefix ?? "", connection });
  return {
    description: uploads.description,
    list: () => withS3CredentialsHint(uploads.list()),
    referencesIn: (state) => uploads.referencesIn(state),
    abort: (work) => uploads.abort(work),
    close: () => uploads.close(),
  };
}

export async function fileFinder(flags: {
  directory?: string;
  sink?: string;
  partPrefix?: string;
}): Promise<LingeringWorkFinder> {
  const directory = required("--directory", flags.directory, "the sink's directory");
  if (!flags.sink && flags.partPrefix === undefined) {
    throw new ConfigurationError("--sink", "is required: the sink's name in the job (or its --part-prefix)");
  }
  const file = await loadConnector<typeof FileConnector>("@exactly/file", "exactly lingering file");
  return new file.LocalLingeringParts({
    directory,
    ...(flags.sink ? { sinkName: flags.sink } : {}),
    ...(flags.partPrefix !== undefined ? { partPrefix: flags.partPrefix } : {}),
  });
}
