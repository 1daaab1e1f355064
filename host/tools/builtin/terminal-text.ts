// Terminal output as a model should read it: escape sequences (colours, cursor moves, titles)
// removed, CRLF as LF, and a carriage return inside a line (progress bars) keeping only what was
// written last. A scanner rather than regular expressions: the input is raw bytes from a program.

const ESC = 0x1b;
const BEL = 0x07;

/** Drops CSI, OSC and two-byte escape sequences and other C0 controls except \n, \r and \t. */
const stripEscapes = (text: string): string => {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === ESC) {
      const next = text.charCodeAt(i + 1);
      if (next === 0x5b) {
        // CSI: parameters and intermediates, then one final byte in @..~
        i += 2;
        while (i < text.length && !(text.charCodeAt(i) >= 0x40 && text.charCodeAt(i) <= 0x7e)) i++;
        i++;
      } else if (next === 0x5d) {
        // OSC: up to BEL or ESC \
        i += 2;
        while (i < text.length && text.charCodeAt(i) !== BEL && text.charCodeAt(i) !== ESC) i++;
        i += text.charCodeAt(i) === ESC ? 2 : 1;
      } else {
        i += 2;
      }
      continue;
    }
    if (c < 0x20 && c !== 0x0a && c !== 0x0d && c !== 0x09) {
      i++;
      continue;
    }
    out += text[i];
    i++;
  }
  return out;
};

export const cleanTerminalText = (raw: string): string =>
  stripEscapes(raw)
    .split('\n')
    .map((line) => {
      const l = line.endsWith('\r') ? line.slice(0, -1) : line;
      const at = l.lastIndexOf('\r');
      return at === -1 ? l : l.slice(at + 1);
    })
    .join('\n');

/** Keeps the start and the end of a long text (the end of a log usually matters most). */
export const capMiddle = (text: string, max: number, head = Math.floor(max / 5)): string => {
  if (text.length <= max) return text;
  const tail = max - head;
  const omitted = text.length - max;
  return `${text.slice(0, head)}\n[… ${omitted} characters not shown …]\n${text.slice(text.length - tail)}`;
};
