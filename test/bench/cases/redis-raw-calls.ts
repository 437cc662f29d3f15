/**
 * Script calls written as raw RESP on a socket, for the cases that measure a sink's script
 * alone on the server (its ceiling): the calls are encoded before the clock starts, so only
 * the server's time is measured, not a client library's.
 */
import { once } from "node:events";
import { connect } from "node:net";
import { performance } from "node:perf_hooks";

/** One command in RESP. */
export function resp(args: readonly (string | number)[]): Buffer {
  let text = `*${args.length}\r\n`;
  for (const arg of args) {
    const s = String(arg);
    text += `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
  }
  return Buffer.from(text);
}

export interface RawServer {
  readonly host: string;
  readonly port: number;
  readonly username?: string;
  readonly password?: string;
}

/**
 * Sends `setup` (unclocked), then `commands` `inFlight` at a time, waiting for every reply:
 * integers, or errors, which fail the case. Returns when the clocked commands started and ended
 * (performance.now()), so several servers sent to at once are timed together.
 */
export async function sendRaw(
  server: RawServer,
  setup: readonly Buffer[],
  commands: readonly Buffer[],
  inFlight: number,
): Promise<{ started: number; ended: number }> {
  const socket = connect(server.port, server.host);
  await once(socket, "connect");
  let replies = 0;
  let wanted = 0;
  let wake: (() => void) | undefined;
  let failure: string | undefined;
  let pending = "";
  socket.on("data", (data: Buffer) => {
    // Every reply is one line (an integer, OK or an error).
    const text = pending + data.toString("latin1");
    const lines = text.split("\r\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      if (line.startsWith("-")) failure ??= line;
      replies++;
    }
    if (replies >= wanted) wake?.();
  });
  const send = async (batch: readonly Buffer[]) => {
    wanted += batch.length;
    socket.write(Buffer.concat(batch));
    while (replies < wanted && failure === undefined) await new Promise<void>((resolve) => (wake = resolve));
    if (failure) throw new Error(`redis: ${failure}`);
  };
  try {
    const { username, password } = server;
    if (password) await send([resp(username ? ["AUTH", username, password] : ["AUTH", password])]);
    if (setup.length > 0) await send(setup);
    const started = performance.now();
    for (let i = 0; i < commands.length; i += inFlight) await send(commands.slice(i, i + inFlight));
    return { started, ended: performance.now() };
  } finally {
    socket.end();
  }
}
