// Orders into a Kafka topic, exactly once by Kafka transactions: `node kafka-orders.ts [count]`
// with KAFKA_BROKERS (comma-separated) set and the topic created up front (the sink never
// creates topics). A test installs @exactly/core and @exactly/kafka alone from their
// tarballs, runs this file against a real broker and reads the topic back read_committed.
import { DeliveryGuarantee, GeneratorSource, StreamJob } from "@exactly/core";
import { kafkaSink } from "@exactly/kafka";

interface Order {
  id: number;
  customer: string;
}

const count = Number(process.argv[2] ?? 10_000);
const topic = process.env.ORDERS_TOPIC ?? "orders";
const checkpoint = { storage: "./checkpoints/orders-to-kafka", intervalMs: 500, timeoutMs: 30_000 };
const job = new StreamJob({ name: "orders-to-kafka", checkpoint });
const orders = job.fromSource(
  new GeneratorSource<Order>({ name: "orders", count, generate: (id) => ({ id, customer: `c${id % 100}` }) }),
);

// #region sink
orders.sinkTo(
  kafkaSink<Order>({
    brokers: (process.env.KAFKA_BROKERS ?? "127.0.0.1:9092").split(","),
    topic,
    guarantee: DeliveryGuarantee.EXACTLY_ONCE,
    transactionalIdPrefix: `orders-to-kafka-${topic}`, // unique in the cluster
    transactionTimeoutMs: 60_000, // must outlast interval + checkpoint timeout + restart delay
    // The sink checks the timeout against the job's interval, checkpoint timeout and longest restart delay.
    checkpointTiming: { intervalMs: checkpoint.intervalMs, timeoutMs: checkpoint.timeoutMs, restartDelayMs: 10_000 },
    serializer: (o) => ({ key: o.customer, value: JSON.stringify(o) }),
  }),
  { name: "orders" },
);
// #endregion sink

const result = await job.execute();
console.log(JSON.stringify({ checkpointsCompleted: result.checkpointsCompleted }));
