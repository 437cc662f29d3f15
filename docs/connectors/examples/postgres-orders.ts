// Orders into Postgres, exactly once: `node postgres-orders.ts [count]` with DATABASE_URL set,
// after creating the table the sink writes into (the sink never creates it):
//   CREATE TABLE orders (id bigint PRIMARY KEY, customer text, total numeric, placed_at timestamptz)
// A test installs @exactly/core and @exactly/postgres alone from their tarballs, runs this file
// against a real server and reads the table back.
import { DeliveryGuarantee, GeneratorSource, StreamJob } from "@exactly/core";
import { postgresSink } from "@exactly/postgres";

interface Order {
  id: number;
  customer: { name: string };
  total: number;
  placed_at: Date;
}

const count = Number(process.argv[2] ?? 10_000);
const job = new StreamJob({
  name: "orders-to-postgres",
  checkpoint: { storage: "./checkpoints/orders-to-postgres", intervalMs: 500 },
});
const orders = job.fromSource(
  new GeneratorSource<Order>({
    name: "orders",
    count,
    generate: (id) => ({ id, customer: { name: `c${id % 100}` }, total: id / 4, placed_at: new Date(id * 1000) }),
  }),
);

// #region sink
orders.sinkTo(
  postgresSink<Order>({
    connection: process.env.DATABASE_URL ?? "postgres://localhost/postgres", // or pg's client settings
    guarantee: DeliveryGuarantee.EXACTLY_ONCE,
    exactlyOnce: "two-phase", // or "write-ahead" where max_prepared_transactions is 0
    table: {
      schema: "public",
      table: "orders",
      columns: [
        { name: "id", type: "bigint" },
        { name: "customer", type: "text", value: (o) => o.customer.name },
        { name: "total", type: "numeric" },
        { name: "placed_at", type: "timestamptz" },
      ],
      write: { upsertOn: ["id"] }, // or "append"
    },
  }),
  { name: "orders" },
);
// #endregion sink

const result = await job.execute();
console.log(JSON.stringify({ checkpointsCompleted: result.checkpointsCompleted }));
