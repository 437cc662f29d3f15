#!/usr/bin/env node
// Runs the built CLI. Inside this repository, `node --conditions=@exactly/source
// packages/cli/src/main.ts` runs it from the sources instead.

import { readFileSync } from "node:fs";

// A Node older than package.json's engines field fails somewhere inside the CLI's modules, with
// an error that does not say why. So before anything else is loaded, this file, written for any
// Node that runs ES modules, compares the version with the field and names the one needed.
const engines = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).engines?.node;
if (typeof engines === "string" && !satisfies(process.versions.node, engines)) {
  console.error(`exactly needs Node.js ${engines}, and this is Node.js ${process.versions.node}: install a newer one`);
  process.exit(2);
}

/**
 * Whether `version` (major.minor.patch) is in `range`: comparators (>=, >, <=, <, =) joined by
 * spaces, alternatives by ||, the forms an engines field uses. A form it does not read counts
 * as met: Node itself then decides.
 */
function satisfies(version, range) {
  const have = version.split(".").map(Number);
  const compare = (want) => {
    for (let i = 0; i < 3; i++) if (have[i] !== want[i]) return have[i] < want[i] ? -1 : 1;
    return 0;
  };
  return range.split("||").some((alternative) =>
    alternative
      .trim()
      .split(/\s+/)
      .every((comparator) => {
        const parsed = /^(>=|<=|>|<|=)?v?(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(comparator);
        if (!parsed) return true;
        const order = compare([Number(parsed[2]), Number(parsed[3] ?? 0), Number(parsed[4] ?? 0)]);
        switch (parsed[1]) {
          case ">=":
            return order >= 0;
          case ">":
            return order > 0;
          case "<=":
            return order <= 0;
          case "<":
            return order < 0;
          default:
            return order === 0;
        }
      }),
  );
}

// kafkajs 2.2.4 arms a timer with a negative delay on Node 24, which Node corrects and
// reports as a TimeoutNegativeWarning (tulios/kafkajs#1751). It is harmless; only that one
// warning is dropped, every other goes through.
const emitWarning = process.emitWarning;
process.emitWarning = (warning, ...rest) => {
  const type = typeof rest[0] === "string" ? rest[0] : rest[0]?.type;
  if (type === "TimeoutNegativeWarning") return;
  return emitWarning.call(process, warning, ...rest);
};

const { main } = await import("../dist/main.js");
main(process.argv).catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(2);
});
