// Integer columns take numbers, bigints and digit strings, and refuse what the server would,
// with its SQLSTATE: the bounds of each width, fractions, numbers past 2^53.
import { describe, expect, it } from "vitest";
import { encodeValue } from "../src/column-types.ts";
import { RowRejectedError } from "../src/errors.ts";

function refusal(run: () => unknown): string | undefined {
  try {
    run();
    return undefined;
  } catch (error) {
    return error instanceof RowRejectedError ? error.sqlstate : `not a RowRejectedError: ${String(error)}`;
  }
}

describe("integer column types", () => {
  const widths = [
    ["smallint", 2n ** 15n],
    ["integer", 2n ** 31n],
    ["bigint", 2n ** 63n],
  ] as const;

  it.each(widths)(
    "%s: the bounds are accepted as numbers, bigints and strings; one past them is 22003",
    (type, limit) => {
      for (const n of [-limit, limit - 1n, 0n, 42n]) {
        expect(encodeValue(type, n, "c")).toBe(n.toString());
        expect(encodeValue(type, n.toString(), "c")).toBe(n.toString());
        if (Number.isSafeInteger(Number(n))) expect(encodeValue(type, Number(n), "c")).toBe(n.toString());
      }
      for (const n of [-limit - 1n, limit]) {
        expect(refusal(() => encodeValue(type, n, "c"))).toBe("22003");
        if (Number.isSafeInteger(Number(n))) expect(refusal(() => encodeValue(type, Number(n), "c"))).toBe("22003");
      }
    },
  );

  it("a fraction is 22P02, a number past 2^53 is 22003, -0 is 0", () => {
    expect(refusal(() => encodeValue("integer", 1.5, "c"))).toBe("22P02");
    expect(refusal(() => encodeValue("bigint", 2 ** 53, "c"))).toBe("22003");
    expect(encodeValue("bigint", Number.MAX_SAFE_INTEGER, "c")).toBe(String(Number.MAX_SAFE_INTEGER));
    expect(encodeValue("integer", -0, "c")).toBe("0");
    expect(refusal(() => encodeValue("integer", "12a", "c"))).toBe("22P02");
  });
});
