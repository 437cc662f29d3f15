// What a test is given to reach the redis service: its module reads it from the environment,
// and the container, the launcher and the probe make or check one.

export interface RedisEndpoint {
  url: string;
}
