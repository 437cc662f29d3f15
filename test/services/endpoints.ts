/**
 * @deprecated The endpoints live in the test kit: import from "@exactly/testkit/endpoints".
 * Kept for the tests that still import this path; remove when none does.
 */
export * from "@exactly/testkit/endpoints";
