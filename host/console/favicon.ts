// The console's icon (/favicon.ico): a 16×16 prompt drawn from the map below and encoded as an ICO
// (one 32-bit BMP image) when first asked for, so no binary file lives in the repository.
// Invariant: the bytes are a valid ICO that browsers draw (BMP rows bottom-up, AND mask after).

/** `#` the glyph, `.` the tile, ` ` transparent (the tile's rounded corners). */
const MAP = [
  ' .............. ',
  '................',
  '................',
  '..##............',
  '...##...........',
  '....##..........',
  '.....##.........',
  '......##........',
  '.....##.........',
  '....##..........',
  '...##...........',
  '..##....######..',
  '........######..',
  '................',
  '................',
  ' .............. ',
];

/** BGRA of each map character. */
const COLOURS: Record<string, [number, number, number, number]> = {
  '#': [0x3c, 0xd0, 0x5b, 0xff],
  '.': [0x24, 0x1f, 0x1b, 0xff],
  ' ': [0, 0, 0, 0],
};

const SIZE = 16;

const encode = (): Uint8Array => {
  const pixels = SIZE * SIZE * 4;
  const mask = SIZE * 4; // 1 bit a pixel, rows padded to 4 bytes
  const image = 40 + pixels + mask;
  const out = Buffer.alloc(6 + 16 + image);
  out.writeUInt16LE(1, 2); // type: icon
  out.writeUInt16LE(1, 4); // one image
  out.writeUInt8(SIZE, 6);
  out.writeUInt8(SIZE, 7);
  out.writeUInt16LE(1, 10); // planes
  out.writeUInt16LE(32, 12); // bits a pixel
  out.writeUInt32LE(image, 14);
  out.writeUInt32LE(22, 18); // where the image starts
  out.writeUInt32LE(40, 22); // BITMAPINFOHEADER
  out.writeInt32LE(SIZE, 26);
  out.writeInt32LE(SIZE * 2, 30); // the height counts the XOR image and the AND mask
  out.writeUInt16LE(1, 34);
  out.writeUInt16LE(32, 36);
  out.writeUInt32LE(pixels + mask, 42);
  for (let y = 0; y < SIZE; y++) {
    const row = MAP[SIZE - 1 - y] as string; // bottom-up
    for (let x = 0; x < SIZE; x++) {
      const colour = COLOURS[row[x] ?? ' '] ?? COLOURS[' '];
      out.set(colour as number[], 62 + (y * SIZE + x) * 4);
    }
  }
  // The AND mask stays zero: the alpha channel says what is transparent.
  return new Uint8Array(out);
};

let icon: Uint8Array | undefined;

/** The icon's ICO bytes. */
export const favicon = (): Uint8Array => {
  icon ??= encode();
  return icon;
};
