// cluster-key-slot ships no types. It is the slot function ioredis routes commands by
// (pinned to the version ioredis 6.0.0 depends on), so calls grouped by it go where ioredis sends them.
declare module "cluster-key-slot" {
  /** The Redis Cluster hash slot (0–16383) of a key, hash tags included. */
  export default function calculateSlot(key: string): number;
}
