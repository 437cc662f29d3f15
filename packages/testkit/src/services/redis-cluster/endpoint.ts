// What a test is given to reach the redis-cluster service: its module reads it from the environment,
// and the container, the launcher and the probe make or check one.

export interface RedisClusterEndpoint {
  /** `host:port` of the nodes a client starts from; it learns the others from them. */
  nodes: string[];
}
