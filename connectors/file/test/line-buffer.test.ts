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
    const needed = LineBuffer.FLUSH_BYTES / line.length;
    for (let i = 1; i < needed; i++) expect(buffer.add(line)).toBe(false);
    expect(buffer.add(line)).toBe(true);
    expect(buffer.take()?.length).toBe(LineBuffer.FLUSH_BYTES);
  });

  it("drops what it holds when cleared", () => {
    const buffer = new LineBuffer();
    for (let i = 0; i < LineBuffer.JOIN_LINES + 3; i++) buffer.add("a\n");
    buffer.clear();
    buffer.add("b\n");
    expect(buffer.take()?.toString()).toBe("b\n");
  });

  it("reuses its bytes from one take to the next, and grows for lines of several bytes a character", () => {
    const buffer = new LineBuffer();
    const fill = (line: (i: number) => string) => {
      const lines: string[] = [];
      for (let i = 0; !buffer.add(line(i)); i++) lines.push(line(i));
      lines.push(line(lines.length));
      return lines.join("");
    };
    const ascii = (i: number) => `${i}${"a".repeat(1023)}\n`;
    const first = fill(ascii);
    const taken = buffer.take() as Buffer;
    expect(taken.toString()).toBe(first);
    const second = fill(ascii);
    const again = buffer.take() as Buffer;
    expect(again.toString()).toBe(second);
    // The same memory as before: what was taken must be written out before lines are added.
    expect(again.buffer).toBe(taken.buffer);
    // Three bytes a character: more bytes than characters, every group whole and in order.
    const wide = (i: number) => `${i}${"€".repeat(511)}\n`;
    const third = fill(wide);
    const grown = buffer.take() as Buffer;
    expect(grown.toString()).toBe(third);
    expect(grown.length).toBe(Buffer.byteLength(third));
  });
});
