import { describe, expect, it } from "vitest";
import { LineBuffer } from "../src/line-buffer.ts";

describe("LineBuffer", () => {
  it("takes nothing when nothing was added", () => {
    expect(new LineBuffer().take()).toBeUndefined();
  });

  it("gives back every line in order across the groups it joins", () => {
    const buffer = new LineBuffer();
    const lines: string[] = [];
    // Two and a half groups, with multi-byte characters, so order and byte counts are both checked.
    for (let i = 0; i < LineBuffer.JOIN_LINES * 2.5; i++) {
      const line = `{"n":${i},"s":"é${i}"}\n`;
      lines.push(line);
      expect(buffer.add(line)).toBe(false);
    }
    const taken = buffer.take();
    expect(taken?.toString("utf8")).toBe(lines.join(""));
    expect(taken?.length).toBe(Buffer.byteLength(lines.join("")));
    expect(buffer.pending).toBe(0);
    expect(buffer.take()).toBeUndefined();
  });

  it("says when enough has gathered to be written out", () => {
    const buffer = new LineBuffer();
    const line = `${"x".repeat(1023)}\n`;
    const needed = LineBuffer.FLUSH_CHARS / line.length;
    for (let i = 1; i < needed; i++) expect(buffer.add(line)).toBe(false);
    expect(buffer.add(line)).toBe(true);
    expect(buffer.take()?.length).toBe(LineBuffer.FLUSH_CHARS);
  });

  it("drops what it holds when cleared", () => {
    const buffer = new LineBuffer();
    for (let i = 0; i < LineBuffer.JOIN_LINES + 3; i++) buffer.add("a\n");
    buffer.clear();
    buffer.add("b\n");
    expect(buffer.take()?.toString()).toBe("b\n");
  });
});
