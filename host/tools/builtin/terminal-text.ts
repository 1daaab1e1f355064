// Terminal output as a model should read it: escape sequences (colours, cursor moves, titles)
// removed, CRLF as LF, and a carriage return inside a line (progress bars) keeping only what was
// written last.
// Bound: the input is model- and program-controlled (up to 4 MiB from the persistent shell) and
// this runs on the control plane's event loop, so every pass is linear: one regular expression
// that cannot backtrack (see ESCAPES), native replaceAll for CRLF, and one forward pass over the
// remaining carriage returns that copies whole runs with slice (never a character at a time, never
// a split into lines).

const CR = 0x0d;

/**
 * CSI (ESC [ … final byte in @..~), OSC (ESC ] … BEL or ESC and one more character), any other ESC
 * with the character after it, and C0 controls other than \n, \r and \t. Every alternative starts
 * with its own literal and ends in an optional part, so a match never backtracks: linear time.
 */
const ESCAPES =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: terminal control characters are what it removes
  /\u001b(?:\[[^\u0040-\u007e]*[\u0040-\u007e]?|\][^\u0007\u001b]*(?:\u0007|\u001b[\s\S]?)?|[\s\S]?)|[\u0000-\u0008\u000b\u000c\u000e-\u001a\u001c-\u001f]/g;

/** Each carriage return drops what its line held before it, as a terminal would overwrite it. */
const overwriteLines = (text: string): string => {
  const parts: string[] = [];
  let kept = 0; // start of the text not yet copied
  let lineStart = 0;
  // Both searches only move forward, so each character is looked at a bounded number of times.
  let nextNl = text.indexOf('\n');
  for (let i = text.indexOf('\r'); i !== -1; i = text.indexOf('\r', i + 1)) {
    while (nextNl !== -1 && nextNl < i) {
      lineStart = nextNl + 1;
      nextNl = text.indexOf('\n', lineStart);
    }
    if (lineStart > kept) parts.push(text.slice(kept, lineStart));
    kept = i + 1;
    lineStart = kept;
  }
  parts.push(text.slice(kept));
  return parts.join('');
};

/** Escapes dropped, CRLF as LF (and a final CR dropped), other CRs overwriting their line. */
export const cleanTerminalText = (raw: string): string => {
  let text = raw.replace(ESCAPES, '');
  if (!text.includes('\r')) return text;
  text = text.replaceAll('\r\n', '\n');
  if (text.charCodeAt(text.length - 1) === CR) text = text.slice(0, -1);
  return text.includes('\r') ? overwriteLines(text) : text;
};

/** Keeps the start and the end of a long text (the end of a log usually matters most). */
export const capMiddle = (text: string, max: number, head = Math.floor(max / 5)): string => {
  if (text.length <= max) return text;
  const tail = max - head;
  const omitted = text.length - max;
  return `${text.slice(0, head)}\n[… ${omitted} characters not shown …]\n${text.slice(text.length - tail)}`;
};
