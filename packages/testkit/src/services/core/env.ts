// How endpoints travel through environment variables: `pnpm services env` prints them as shell
// lines, CI evals those, global setup reads them back through each module's fromEnv.

import type { ServiceModule } from "./service-module.ts";

/** The variable's value, trimmed; undefined when unset or blank. */
export function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value === "" ? undefined : value;
}

/** `export NAME=value` lines that make the module's `fromEnv` return this endpoint. */
export function envLines<E>(module: ServiceModule<E>, endpoint: E): string[] {
  return Object.entries(module.toEnv(endpoint)).map(([name, value]) => `export ${name}=${shellQuote(value)}`);
}

/** A URL that is safe to print: the password, if any, replaced by ***. */
export function redactUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "<unparseable URL>";
  }
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}
