/**
 * Lines an open part has accepted but not yet handed to its storage: gathered as strings
 * (no Buffer per record) and taken as one Buffer once 256 KiB have gathered, or on flush.
 * Every writer's open part keeps one.
 *
 * Every 256 lines are joined into one flat string at once. A line built by concatenation
 * is a tree of small strings; kept as it is until the 256 KiB are taken, each tree would
 * outlive several young-generation collections and be copied at every one. Measured on the
 * demo job (5,000,000 records): scavenges took 2.9 ms each on one loop and on each worker
 * thread with the lines kept, 1.5–1.7 ms with them joined by 256.
 */
export class LineBuffer {
  static readonly FLUSH_CHARS = 256 * 1024;
  static readonly JOIN_LINES = 256;
  /** Groups of lines already joined into one string each. */
  private joined: string[] = [];
  /** The lines added since the last group was joined. */
  private recent: string[] = [];
  private chars = 0;

  /** String length, not bytes: only a threshold; exact lengths are counted when taken. */
  get pending(): number {
    return this.chars;
  }

  /** Adds `data`; true once enough has gathered to be written out. */
  add(data: string): boolean {
    this.recent.push(data);
    if (this.recent.length >= LineBuffer.JOIN_LINES) {
      this.joined.push(this.recent.join(""));
      this.recent = [];
    }
    this.chars += data.length;
    return this.chars >= LineBuffer.FLUSH_CHARS;
  }

  /** Everything gathered, as bytes, in the order added, or undefined if nothing is. */
  take(): Buffer | undefined {
    if (this.chars === 0) return undefined;
    this.joined.push(this.recent.join(""));
    const data = Buffer.from(this.joined.join(""));
    this.clear();
    return data;
  }

  clear(): void {
    this.joined = [];
    this.recent = [];
    this.chars = 0;
  }
}
