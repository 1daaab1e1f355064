// JSDoc text for generated declarations. Descriptions are untrusted text: nothing in them may
// end the comment early, and line breaks of every kind become comment lines.

/** Splits text into comment-safe lines: a star-slash cannot close the comment; trailing blanks go. */
export function docLines(text: string): string[] {
  const lines = text
    .replace(/\*\//g, '*\\/')
    .split(/\r\n|[\r\n\u2028\u2029]/)
    .map((line) => line.replace(/\s+$/, ''));
  while (lines.length > 0 && lines[0] === '') lines.shift();
  while (lines.length > 0 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

/** A one-line inline form of text, for tag values such as `@param` names. */
export function docInline(text: string): string {
  return docLines(text).join(' ');
}

/**
 * A JSDoc block at `indent`, one line when it fits on one line. Returns '' for no lines.
 * Every line ends with '\n'.
 */
export function docComment(lines: readonly string[], indent: string): string {
  if (lines.length === 0) return '';
  if (lines.length === 1) return `${indent}/** ${lines[0]} */\n`;
  const body = lines.map((line) => (line === '' ? `${indent} *\n` : `${indent} * ${line}\n`));
  return `${indent}/**\n${body.join('')}${indent} */\n`;
}

const MAX_DEFAULT_LENGTH = 120;

/** JSON text of a `default` value for an `@default` tag, or undefined if it has none. */
export function defaultText(value: unknown): string | undefined {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    return undefined;
  }
  if (json === undefined) return undefined;
  const text = docInline(json);
  return text.length > MAX_DEFAULT_LENGTH ? `${text.slice(0, MAX_DEFAULT_LENGTH)}…` : text;
}
