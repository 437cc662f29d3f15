/** The runtime's only channel for human-readable messages; no secrets go through it. @public */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** Writes every message to stderr, prefixed `[exactly]`: the logger of a job whose options name none. @public */
export const consoleLogger: Logger = {
  info: (message, fields) => console.error(`[exactly] ${message}`, fields ?? ""),
  warn: (message, fields) => console.error(`[exactly] WARN ${message}`, fields ?? ""),
  error: (message, fields) => console.error(`[exactly] ERROR ${message}`, fields ?? ""),
};

/** Drops every message. @public */
export const silentLogger: Logger = {
  info: () => {},
  warn: () => {},
  error: () => {},
};
