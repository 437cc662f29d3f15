/**
 * The sends of one producer keep their order within every partition, with sends in flight.
 *
 * kafkajs's sendMessages (2.2.4) runs each attempt of a send as: the topics' metadata
 * (`addMultipleTargetTopics`, `refreshMetadataIfNecessary`), the leaders (`findBroker`), then
 * one task per leader broker that takes the producer's lock on that broker
 * (`eosManager.acquireBrokerLock`), adds new partitions to the transaction, assigns the
 * partitions' sequence numbers and makes the Produce request (`broker.produce`), holding the
 * lock until the broker answers. The sequence numbers decide the order in which the records of
 * a partition land, and a send that awaits less (its metadata already fresh) gets them before
 * an earlier send that awaits more. Kafka's Java producer assigns them in send order.
 *
 * {@link SendOrder} restores send order: an attempt of a send starts (enters kafkajs's
 * sendMessages attempt) only when every earlier unfinished send of the producer has made all
 * the Produce requests of its latest attempt, and none of them has failed since; and a send
 * makes a Produce request only under the same condition. So within every partition sequence
 * numbers are assigned in send order, and the broker, which accepts a producer's records of a
 * partition only in sequence order, lands them in that order. In the steady state a send still
 * prepares (metadata, grouping, AddPartitionsToTxn) while the one before awaits the broker.
 *
 * Retries. When a request fails, kafkajs takes the partitions' sequence numbers back and
 * retries the send; a later send that took them first would land before it (and, were the
 * failed request written after all, be dropped by the broker as its duplicate, while the
 * retry is written a second time). So a failed request marks its send failed before kafkajs sees the failure; a
 * later send's request is then refused (a retriable error: kafkajs takes its numbers back
 * too, and retries it after the earlier send's retry has made its requests). A failed attempt
 * ends only once every one of its broker tasks has ended, so that its retry sees which brokers
 * answered (kafkajs would otherwise send a still-unanswered broker's records a second time).
 * A send that fails for good fails every later send of the producer: the sink then fails the
 * transaction (or, without one, the checkpoint) rather than let later records land alone.
 */
import { ExactlyError } from "@exactly/core";
import type { EosManager } from "./shapes.ts";
import { withMethods } from "./views.ts";

/** kafkajs's retrier (src/retry): runs `attempt` until it resolves, bails, or runs out of retries. */
export type Retrier = <T>(
  attempt: (bail: (error: unknown) => void, retryCount: number, retryTime: number) => Promise<T>,
) => Promise<T>;

/** A send's Produce request refused so that it cannot overtake an earlier send of its producer. */
export class SendOrderError extends ExactlyError {
  /** kafkajs retries a send whose error says it may (its retrier and sendMessages read this). */
  readonly retriable: boolean;
  constructor(message: string, retriable: boolean) {
    super("KAFKA_SEND_ORDER", message);
    this.retriable = retriable;
  }
}

/** One broker task of an attempt: from `acquireBrokerLock` to `releaseBrokerLock`. */
interface BrokerTask {
  /** Its Produce request was made: its sequence numbers are assigned. */
  produced: boolean;
  /** Released its lock, or never got it: it assigns nothing more and awaits nothing more. */
  ended: boolean;
}

class Attempt {
  /** Keyed by the broker object kafkajs passes to the lock and whose `produce` it calls. */
  readonly tasks = new Map<object, BrokerTask>();
  settled = false;

  /** No task of this attempt can assign a sequence number any more. */
  get requestsMade(): boolean {
    if (this.settled) return true;
    if (this.tasks.size === 0) return false;
    for (const task of this.tasks.values()) if (!task.produced && !task.ended) return false;
    return true;
  }

  get ended(): boolean {
    for (const task of this.tasks.values()) if (!task.ended) return false;
    return true;
  }
}

/**
 * - waiting: not yet in its first attempt;
 * - assigning: its attempt holds the order (no later send may start or make a request);
 * - assigned: its latest attempt made all its requests, none has failed;
 * - failed: a request or an attempt failed, a retry may come;
 * - broken: it failed for good.
 */
type Phase = "waiting" | "assigning" | "assigned" | "failed" | "broken";

/** The unfinished sends of one producer, in send order. */
export class SendOrder {
  private readonly sends: OrderedSend[] = [];
  private holder: OrderedSend | undefined;
  private waiters: Array<() => void> = [];

  /** A send after every send begun before it; call in send order, then hand {@link OrderedSend.track} its outcome. */
  begin(): OrderedSend {
    const send = new OrderedSend(this);
    this.sends.push(send);
    return send;
  }

  /** Why `send` may not assign sequence numbers now, or undefined if it may. */
  blocker(send: OrderedSend): OrderedSend | undefined {
    for (const earlier of this.sends) {
      if (earlier === send) return undefined;
      if (earlier.phase !== "assigned") return earlier;
    }
    return undefined;
  }

  /** Waits until `send` may start an attempt; throws if an earlier send failed for good. */
  async enter(send: OrderedSend): Promise<void> {
    for (;;) {
      const blocker = this.blocker(send);
      if (blocker?.phase === "broken") {
        throw new SendOrderError("an earlier send of this producer failed", false);
      }
      if (blocker === undefined && this.holder === undefined) {
        this.holder = send;
        return;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  leave(send: OrderedSend): void {
    if (this.holder === send) this.holder = undefined;
    this.changed();
  }

  finish(send: OrderedSend): void {
    this.sends.splice(this.sends.indexOf(send), 1);
    this.leave(send);
  }

  changed(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

/** One send of a producer: the hooks through which kafkajs's sendMessages reports what it does. */
export class OrderedSend {
  phase: Phase = "waiting";
  private readonly order: SendOrder;
  private attempt: Attempt | undefined;
  private attemptFailed = false;
  private attemptEnded: (() => void) | undefined;

  constructor(order: SendOrder) {
    this.order = order;
  }

  /** `base` for this send: each attempt waits its turn, and a failed one returns only once all its broker tasks ended. */
  retrier(base: Retrier): Retrier {
    return (run) =>
      base(async (bail, retryCount, retryTime) => {
        try {
          await this.order.enter(this);
        } catch (error) {
          bail(error);
          throw error;
        }
        const attempt = new Attempt();
        this.attempt = attempt;
        this.attemptFailed = false;
        this.phase = "assigning";
        let bailed = false;
        try {
          const result = await run(
            (error) => {
              bailed = true;
              bail(error);
            },
            retryCount,
            retryTime,
          );
          if (bailed) this.fail();
          return result;
        } catch (error) {
          this.fail();
          if (!attempt.ended) await new Promise<void>((resolve) => (this.attemptEnded = resolve));
          throw error;
        } finally {
          attempt.settled = true;
          this.update();
        }
      });
  }

  /** `eos` with its broker locks reported to this send: they open and close its broker tasks. */
  eosManager(eos: EosManager): EosManager {
    return withMethods(eos, {
      acquireBrokerLock: async (broker: object) => {
        const task: BrokerTask = { produced: false, ended: false };
        this.attempt?.tasks.set(broker, task);
        try {
          await eos.acquireBrokerLock(broker);
        } catch (error) {
          task.ended = true;
          this.fail();
          throw error;
        }
      },
      releaseBrokerLock: (broker: object) => {
        const task = this.attempt?.tasks.get(broker);
        if (task) {
          // Released without a request: AddPartitionsToTxn (or what came before the request) failed.
          if (!task.produced) this.fail();
          task.ended = true;
          this.update();
        }
        return eos.releaseBrokerLock(broker);
      },
    });
  }

  /**
   * Makes the Produce request `request` for `broker`'s task, unless an earlier send has not
   * made all its own (then refused: kafkajs takes the sequence numbers back and retries). A
   * failed request marks the send failed before kafkajs sees it.
   */
  async produce(broker: object, request: () => Promise<unknown>): Promise<unknown> {
    const blocker = this.order.blocker(this);
    if (blocker !== undefined) {
      this.fail();
      throw new SendOrderError(
        blocker.phase === "broken"
          ? "an earlier send of this producer failed"
          : "an earlier send of this producer is being retried; this one goes after it",
        blocker.phase !== "broken",
      );
    }
    const task = this.attempt?.tasks.get(broker);
    if (task) task.produced = true;
    this.update();
    try {
      return await request();
    } catch (error) {
      this.fail();
      throw error;
    }
  }

  /** Ends the send with `outcome`, kafkajs's answer to the whole send. */
  track<T>(outcome: Promise<T>): Promise<T> {
    return outcome.then(
      (value) => {
        this.order.finish(this);
        return value;
      },
      (error: unknown) => {
        this.phase = "broken";
        this.order.leave(this);
        throw error;
      },
    );
  }

  private fail(): void {
    this.attemptFailed = true;
    if (this.phase === "assigned") this.phase = "failed";
    this.update();
  }

  /** After a task or the attempt moved: hand the order on once no task can assign any more; end a failed attempt once all ended. */
  private update(): void {
    const attempt = this.attempt;
    if (!attempt) return;
    if (this.phase === "assigning" && attempt.requestsMade) {
      this.phase = this.attemptFailed ? "failed" : "assigned";
      this.order.leave(this);
    }
    if (this.attemptEnded && attempt.ended) {
      const ended = this.attemptEnded;
      this.attemptEnded = undefined;
      ended();
    }
    this.order.changed();
  }
}
