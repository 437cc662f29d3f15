import { CancelledError } from "../../errors.ts";

/** Where a producing subtask pushes: a local Channel, or the sending half of a thread channel. */
export interface OutputChannel {
  /** Takes the element; returns a promise only when the producer must wait for room. */
  push(element: unknown): Promise<void> | undefined;
  /** Releases a blocked producer with an error; used when the job is torn down. */
  cancel(reason?: unknown): void;
}

/**
 * A bounded single-producer queue between two subtasks. `push` returns a promise only when
 * the queue is full, so a producer pays for backpressure only when there is some.
 * Elements are batches or control events, never single records.
 */
export class Channel<E> implements OutputChannel {
  private readonly queue: E[] = [];
  private readonly spaceWaiters: Array<{ resolve: () => void; reject: (e: unknown) => void }> = [];
  private cancelled: unknown;
  /** Set by the consuming gate: called when an element arrives. */
  onData: (() => void) | undefined;
  /** Set by a channel fed from another thread: called when the consumer takes an element. */
  onTaken: (() => void) | undefined;

  readonly capacity: number;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  get size(): number {
    return this.queue.length;
  }

  push(element: E): Promise<void> | undefined {
    if (this.cancelled !== undefined) throw this.cancelled;
    this.queue.push(element);
    this.onData?.();
    if (this.queue.length < this.capacity) return undefined;
    return new Promise((resolve, reject) => this.spaceWaiters.push({ resolve, reject }));
  }

  poll(): E | undefined {
    const element = this.queue.shift();
    if (element === undefined) return undefined;
    if (this.queue.length < this.capacity) this.spaceWaiters.shift()?.resolve();
    this.onTaken?.();
    return element;
  }

  /** Releases a blocked producer with an error; used when the job is torn down. */
  cancel(reason: unknown = new CancelledError()): void {
    this.cancelled = reason;
    for (const waiter of this.spaceWaiters.splice(0)) waiter.reject(reason);
  }
}

/**
 * The inputs of one subtask. Barrier alignment blocks single inputs: a blocked input is
 * not read until `unblockAll`, so records after barrier n wait until every input reached n.
 */
export class InputGate<E> {
  private readonly blocked: boolean[];
  private next = 0;
  private wake: (() => void) | undefined;
  private failure: unknown;

  readonly channels: readonly Channel<E>[];

  constructor(channels: readonly Channel<E>[]) {
    this.channels = channels;
    this.blocked = channels.map(() => false);
    const notify = () => {
      const wake = this.wake;
      this.wake = undefined;
      wake?.();
    };
    for (const channel of channels) channel.onData = notify;
  }

  get inputCount(): number {
    return this.channels.length;
  }

  block(input: number): void {
    this.blocked[input] = true;
  }

  unblockAll(): void {
    this.blocked.fill(false);
  }

  /** The next element of any unblocked input, fairly across inputs. */
  async take(): Promise<{ input: number; element: E }> {
    for (;;) {
      if (this.failure !== undefined) throw this.failure;
      const found = this.tryTake();
      if (found) return found;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
    }
  }

  private tryTake(): { input: number; element: E } | undefined {
    const n = this.channels.length;
    for (let i = 0; i < n; i++) {
      const input = (this.next + i) % n;
      if (this.blocked[input]) continue;
      const element = this.channels[input]?.poll();
      if (element !== undefined) {
        this.next = (input + 1) % n;
        return { input, element };
      }
    }
    return undefined;
  }

  cancel(reason: unknown = new CancelledError()): void {
    this.failure = reason;
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }
}
