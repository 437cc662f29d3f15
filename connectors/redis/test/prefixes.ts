/**
 * Fresh key prefixes for a test file, deleted after it (not in helpers.ts: the conformance
 * module, which a child process loads, imports those, and this imports vitest).
 */

import { redisUrl } from "@exactly/testkit/endpoints";
import { afterAll } from "vitest";
import { deleteUnder, freshPrefix } from "./helpers.ts";

export function prefixesDeletedAfterAll(): (label: string) => string {
  const prefixes: string[] = [];
  afterAll(async () => {
    for (const prefix of prefixes) await deleteUnder(redisUrl(), prefix);
  });
  return (label) => {
    const prefix = freshPrefix(label);
    prefixes.push(prefix);
    return prefix;
  };
}
