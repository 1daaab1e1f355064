// A bounded byte ring with absolute offsets: the output of one terminal. Offsets count every byte
// ever appended, so a reader that keeps its offset can resume, and one that fell behind learns
// exactly how many bytes were dropped (start - its offset).
// Invariants: start <= end; end - start <= capacity; bytes in [start, end) are exactly the last
// end - start bytes appended.

export class ByteRing {
  readonly capacity: number;
  private chunks: Buffer[] = [];
  private size = 0;
  /** Absolute offset of the first byte still held. */
  start = 0;

  constructor(capacity: number) {
    this.capacity = capacity;
  }

  /** Absolute offset just past the last byte appended. */
  get end(): number {
    return this.start + this.size;
  }

  append(data: Buffer): void {
    if (data.length === 0) return;
    const chunk = data.length > this.capacity ? data.subarray(data.length - this.capacity) : data;
    this.start += data.length - chunk.length;
    const last = this.chunks[this.chunks.length - 1];
    // A copy (the caller may reuse its buffer); small pieces (keystroke echoes) are merged.
    if (last !== undefined && last.length + chunk.length <= 16 * 1024)
      this.chunks[this.chunks.length - 1] = Buffer.concat([last, chunk]);
    else this.chunks.push(Buffer.from(chunk));
    this.size += chunk.length;
    while (this.size > this.capacity) {
      const first = this.chunks[0] as Buffer;
      const over = this.size - this.capacity;
      if (first.length <= over) {
        this.chunks.shift();
        this.size -= first.length;
        this.start += first.length;
      } else {
        this.chunks[0] = first.subarray(over);
        this.size -= over;
        this.start += over;
      }
    }
  }

  /** At most `count` bytes from absolute `offset` (clamped into [start, end]). */
  read(offset: number, count: number): { data: Buffer; offset: number } {
    const from = Math.min(Math.max(offset, this.start), this.end);
    const want = Math.max(0, Math.min(count, this.end - from));
    const parts: Buffer[] = [];
    let skip = from - this.start;
    let left = want;
    for (const chunk of this.chunks) {
      if (left === 0) break;
      if (skip >= chunk.length) {
        skip -= chunk.length;
        continue;
      }
      const part = chunk.subarray(skip, Math.min(chunk.length, skip + left));
      skip = 0;
      left -= part.length;
      parts.push(part);
    }
    return { data: parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts), offset: from };
  }
}
