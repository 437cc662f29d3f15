/**
 * The jobs of docs/writing-a-job.md, each a job module (`exactly run <file>`), and the input
 * they generate.
 * @module @exactly/example-job-guide
 */

export { CUSTOMERS, ORDERS, type Order, order, READINGS, type Reading, reading } from "./input.ts";
export { type Click, default as kafkaClicksJob } from "./kafka-clicks-job.ts";
export { type CustomerTotal, default as orderTotalsJob } from "./order-totals-job.ts";
export { default as sensorWindowsJob, type Mean } from "./sensor-windows-job.ts";
export { default as wordCountJob, type WordCount } from "./word-count-job.ts";
