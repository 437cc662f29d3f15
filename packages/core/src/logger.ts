/** The runtime's only channel for human-readable messages; no secrets go through it. */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export const consoleLogger: Logger = {
  info: (message, fields) => console.error(`[exactly] ${message}`, fields ?? ""),
  warn: (message, fields) => console.error(`[exactly] WARN ${message}`, fields ?? ""),
  error: (message, fields) => console.error(`[exactly] ERROR ${message}`, fields ?? ""),
};

export const silentLogger: Logger = {
  info: () => {},
  warn: () => {},
  error: () => {},
};
