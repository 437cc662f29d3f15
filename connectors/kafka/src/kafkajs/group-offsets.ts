/** Consumer-group offsets written without being a member of the group. */
import { expectFunctions } from "./load.ts";
import type { InternalCluster } from "./shapes.ts";

/** kafkajs's coordinatorTypes.GROUP: FindCoordinator for a consumer group. */
const COORDINATOR_GROUP = 0;

/**
 * Commits offsets to a consumer group without joining it (generation -1, no member id, as
 * Kafka's own admin client does): the group only records progress for lag monitoring.
 * kafkajs's public `admin.setOffsets` would join the group with a consumer to do this.
 */
export async function commitGroupOffsets(
  cluster: InternalCluster,
  groupId: string,
  topics: Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }>,
): Promise<void> {
  await cluster.refreshMetadataIfNecessary();
  const broker = await cluster.findGroupCoordinator({ groupId, coordinatorType: COORDINATOR_GROUP });
  expectFunctions("Broker", broker, ["offsetCommit"]);
  await broker.offsetCommit({ groupId, groupGenerationId: -1, memberId: "", topics });
}
