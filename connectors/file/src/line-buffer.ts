/**
 * Lines an open part has accepted but not yet handed to its storage: gathered as strings
 * (no Buffer per record) and taken as one Buffer once 256 KiB have gathered, or on flush.
 * Every writer's open part keeps one.
 */
export class LineBuffer {
  static readonly FLUSH_CHARS = 256 * 1024;
  private chunks: string[] = [];
  private chars = 0;

  /** String length, not bytes: only a threshold; exact lengths are counted when taken. */
  get pending(): number {
    return this.chars;
  }

  /** Adds `data`; true once enough has gathered to be written out. */
  add(data: string): boolean {
    this.chunks.push(data);
    this.chars += data.length;
    return this.chars >= LineBuffer.FLUSH_CHARS;
  }

  /** Everything gathered, as bytes, or undefined if nothing is. */
  take(): Buffer | undefined {
    if (this.chars === 0) return undefined;
    const data = Buffer.from(this.chunks.join(""));
    this.clear();
    return data;
  }

  clear(): void {
    this.chunks = [];
    this.chars = 0;
  }
}
