#!/usr/bin/env node
// Runs the built CLI. Inside this repository, `node --conditions=@exactly/source
// packages/cli/src/main.ts` runs it from the sources instead.

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
