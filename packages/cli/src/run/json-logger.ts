import type { Logger } from "@exactly/core";

/**
 * A logger writing one JSON object per line (`time`, `level`, `msg`, then the fields), for
 * log collectors. The runtime never puts secrets in messages or fields.
 */
export function jsonLogger(stream: NodeJS.WritableStream): Logger {
  const write = (level: string, message: string, fields?: Record<string, unknown>) => {
    const entry = { time: new Date().toISOString(), level, msg: message, ...fields };
    stream.write(`${JSON.stringify(entry, (_key, value) => (value instanceof Error ? value.message : value))}\n`);
  };
  return {
    info: (message, fields) => write("info", message, fields),
    warn: (message, fields) => write("warn", message, fields),
    error: (message, fields) => write("error", message, fields),
  };
}
