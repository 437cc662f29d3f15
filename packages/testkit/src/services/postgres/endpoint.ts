// What a test is given to reach the postgres service: its module reads it from the environment,
// and the container, the launcher and the probe make or check one.

export interface PostgresEndpoint {
  url: string;
}
