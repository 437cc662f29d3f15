/**
 * @deprecated `runExactly` lives in the test kit: import from "@exactly/testkit/run-cli".
 * Kept for the tests that still import this path; remove when none does.
 */
export * from "@exactly/testkit/run-cli";
