// What a test is given to reach the kafka service: its module reads it from the environment,
// and the container, the launcher and the probe make or check one.

export interface KafkaEndpoint {
  brokers: string[];
  /**
   * A listener that advertises an address nobody serves until a test's TCP proxy listens there
   * (`advertised`), forwarding to the listener itself (`upstream`): a client bootstrapped at
   * `advertised` makes every broker connection through the proxy, whatever client it is.
   */
  proxied?: { advertised: string; upstream: string };
  /** A SASL_PLAINTEXT listener with SCRAM-SHA-256 enabled (no user: a test creates its own). */
  scramBrokers?: string[];
}
