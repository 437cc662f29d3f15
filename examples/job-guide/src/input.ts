/**
 * The input of the guide's jobs. Each record is a pure function of its index, so a replay after
 * a restore generates the same records again (GeneratorSource asks for that), and the tests can
 * compute in one batch what each job must have written.
 */

/** An order as the shop records it; cancelled ones are filtered out by the job. */
export interface Order {
  readonly id: number;
  readonly customer: number;
  readonly cents: number;
  readonly status: "placed" | "cancelled";
}

/** Customers are numbered 0 … CUSTOMERS − 1: customer i's orders are the ids i, i + CUSTOMERS, … */
export const CUSTOMERS = 8;
export const ORDERS = 2_000;

export function order(id: number): Order {
  return {
    id,
    customer: id % CUSTOMERS,
    cents: 100 + ((id * 7_919) % 9_900),
    status: id % 10 === 3 ? "cancelled" : "placed",
  };
}

/** A temperature reading with its event time: when the sensor measured it, not when it arrived. */
export interface Reading {
  readonly sensor: string;
  readonly celsius: number;
  /** Event time, ms since the epoch. */
  readonly ts: number;
}

export const READINGS = 3_000;
/** 2026-01-01T00:00:00Z: a whole second, so 1 s windows start on the record timestamps' seconds. */
const EPOCH = 1_767_225_600_000;

/**
 * Reading `i`, measured 10 ms after reading i − 1 but delivered up to 80 ms out of order: the
 * `maxOutOfOrdernessMs: 100` of the windows job covers it, so no reading is late.
 */
export function reading(i: number): Reading {
  return { sensor: `sensor-${i % 3}`, celsius: (i * 13) % 40, ts: EPOCH + i * 10 + ((i * 7) % 5) * 20 };
}
