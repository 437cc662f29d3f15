/**
 * How every command reaches S3 (the demo's `--sink s3`, `inspect` and `lingering` of an
 * s3:// location): `@exactly/file/s3`, loaded only when a command needs it, and the
 * connection from a flag and the environment.
 */

import { ConfigurationError } from "@exactly/core";
import type * as S3Connector from "@exactly/file/s3";
import { loadConnector } from "./load-connector.ts";

/** The help of `--s3-endpoint`, the one name every command gives the S3 server. */
export const S3_ENDPOINT_HELP = "the S3-compatible server (default: $EXACTLY_S3_ENDPOINT, else AWS)";

export type S3ConnectorModule = typeof S3Connector;

/**
 * `@exactly/file/s3`, which needs the optional peer `@aws-sdk/client-s3`. `user`: the option
 * or command that needs it, for the error when it is not installed.
 */
export function loadS3Connector(user: string): Promise<S3ConnectorModule> {
  return loadConnector<S3ConnectorModule>("@exactly/file/s3", user, ["@aws-sdk/client-s3"]);
}

/** Errors of the SDK that mean the credentials are missing or wrong. */
const CREDENTIALS_ERRORS = new Set(["CredentialsProviderError", "InvalidAccessKeyId", "SignatureDoesNotMatch"]);

/**
 * `work`, with the SDK's "Could not load credentials from any providers" and a key the server
 * does not know turned into a ConfigurationError that says which variables give the credentials.
 */
export async function withS3CredentialsHint<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (!CREDENTIALS_ERRORS.has((error as { name?: string } | null)?.name ?? "")) throw error;
    throw new ConfigurationError(
      "S3 credentials",
      `${(error as Error).message}: set $EXACTLY_S3_ACCESS_KEY and $EXACTLY_S3_SECRET_KEY (or AWS's own $AWS_ACCESS_KEY_ID, $AWS_SECRET_ACCESS_KEY, $AWS_PROFILE), and --s3-endpoint for a server other than AWS`,
      { cause: error },
    );
  }
}

/**
 * `endpoint`, else $EXACTLY_S3_ENDPOINT (an S3-compatible server, addressed by path), else
 * AWS; credentials from $EXACTLY_S3_ACCESS_KEY and $EXACTLY_S3_SECRET_KEY when both are set,
 * else the SDK's default chain.
 */
export function s3ConnectionFromEnv(endpointFlag: string | undefined): S3Connector.S3ConnectionOptions {
  const endpoint = endpointFlag ?? process.env.EXACTLY_S3_ENDPOINT;
  const accessKeyId = process.env.EXACTLY_S3_ACCESS_KEY;
  const secretAccessKey = process.env.EXACTLY_S3_SECRET_KEY;
  const region = process.env.EXACTLY_S3_REGION;
  return {
    ...(endpoint ? { endpoint, forcePathStyle: true } : {}),
    ...(region ? { region } : {}),
    ...(accessKeyId && secretAccessKey ? { credentials: { accessKeyId, secretAccessKey } } : {}),
  };
}
