#!/usr/bin/env node
// Runs the built CLI. Inside this repository, `node --conditions=@exactly/source
// packages/cli/src/main.ts` runs it from the sources instead.
import { main } from "../dist/main.js";

main(process.argv).catch((error) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(2);
});
