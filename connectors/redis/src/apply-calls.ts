/**
 * A checkpoint's logged operations as calls of the `applyChunk` script, `operationsPerCall`
 * each, built as the log is read (never the whole checkpoint at once). A call's layout is the
 * script's (see `lua/scripts.ts`): KEYS are the marker, then each operation's key in order;
 * ARGV is a header, then runs of operations that share a command and an argument count, each
 * run as `command, argc, n` and then the n operations' arguments. The server then reads one
 * command name per run, not per operation.
 */
import { FIRST_OPERATION, type LoggedOperations } from "./logged-operations.ts";
import type { ScriptCall } from "./redis-connection.ts";

/** ARGV[3] and ARGV[4] of a call: whether it is the checkpoint's last, and its operation count. */
const LAST_AT = 2;
const COUNT_AT = 3;

export class ApplyCalls {
  private readonly marker: string;
  private readonly checkpointId: number;
  private readonly epoch: number;
  private readonly keyPrefix: string;
  private readonly operationsPerCall: number;
  /** The index, within the checkpoint, of the open call's first operation. */
  private first = 0;
  private count = 0;
  private keys: string[] = [];
  private args: (string | number)[] = [];
  /** Where the open run's `n` is in `args`, and the run's command and argument count. */
  private runCountAt = -1;
  private runCommand = "";
  private runArgc = -1;
  /** A full call, held until it is known whether it is the checkpoint's last. */
  private full: { keys: string[]; args: (string | number)[] } | undefined;

  constructor(marker: string, checkpointId: number, epoch: number, keyPrefix: string, operationsPerCall: number) {
    this.marker = marker;
    this.checkpointId = checkpointId;
    this.epoch = epoch;
    this.keyPrefix = keyPrefix;
    this.operationsPerCall = operationsPerCall;
    this.open();
  }

  /** Adds one logged record's operations; appends to `ready` the calls this completes. */
  add(logged: LoggedOperations, ready: ScriptCall[]): void {
    for (let at = FIRST_OPERATION; at < logged.length; ) {
      const parts = logged[at] as number;
      if (this.full) {
        ready.push(this.full);
        this.full = undefined;
      }
      const command = logged[at + 1] as string;
      const argc = parts - 2;
      this.keys.push(this.keyPrefix + (logged[at + 2] as string));
      if (command === this.runCommand && argc === this.runArgc) {
        (this.args[this.runCountAt] as number)++;
      } else {
        this.args.push(command, argc, 1);
        this.runCountAt = this.args.length - 1;
        this.runCommand = command;
        this.runArgc = argc;
      }
      for (let i = at + 3; i <= at + parts; i++) this.args.push(logged[i] as string | number);
      at += 1 + parts;
      if (++this.count === this.operationsPerCall) {
        this.args[COUNT_AT] = this.count;
        this.full = { keys: this.keys, args: this.args };
        this.first += this.count;
        this.open();
      }
    }
  }

  /** The checkpoint's last call (with no operation for an empty checkpoint): it marks it done. */
  finish(ready: ScriptCall[]): void {
    if (this.count === 0 && this.full) {
      this.full.args[LAST_AT] = 1;
      ready.push(this.full);
    } else {
      if (this.full) ready.push(this.full);
      this.args[LAST_AT] = 1;
      this.args[COUNT_AT] = this.count;
      ready.push({ keys: this.keys, args: this.args });
    }
    this.full = undefined;
    this.open();
  }

  private open(): void {
    this.count = 0;
    this.keys = [this.marker];
    this.args = [this.checkpointId, this.first, 0, 0, this.epoch];
    this.runCountAt = -1;
    this.runCommand = "";
    this.runArgc = -1;
  }
}
