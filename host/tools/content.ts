// Model-facing content helpers: the default renderer of canonical values, the one error text
// format, and `withContent` for a body that renders its own content. Invariant: a failed call's
// content is exactly `Error: <message>`, nothing more.
import { jsonText } from './json-text.ts';
import type { ContentPart } from './types.ts';

/** Default render: a string value is text as-is; any other JSON value as jsonText shows it. */
export const renderValue = (value: unknown): ContentPart[] => [
  { type: 'text', text: typeof value === 'string' ? value : jsonText(value) },
];

/** The only content a model sees for a failed or denied call. */
export const errorContent = (message: string): ContentPart[] => [{ type: 'text', text: `Error: ${message}` }];

const isPart = (part: unknown): part is ContentPart => {
  if (typeof part !== 'object' || part === null) return false;
  const p = part as Record<string, unknown>;
  if (p.type === 'text') return typeof p.text === 'string';
  if (p.type === 'image') return typeof p.data === 'string' && typeof p.mimeType === 'string';
  return false;
};

/** Checks content produced by renderers and policies, which are author code we do not trust blindly. */
export const isContent = (content: unknown): content is ContentPart[] =>
  Array.isArray(content) && content.every(isPart);

const RENDERED: unique symbol = Symbol('dsh.rendered');

/** A body's value together with the content it rendered itself (see withContent). */
export interface WithContent<V> {
  readonly [RENDERED]: true;
  readonly value: V;
  readonly content: ContentPart[];
}

/**
 * What a body returns when its content says what its value does not hold: an image whose bytes
 * travel once, in the image part, not again in the value the log keeps (read_image), or a note
 * that a list was cut (glob, grep). The value is still checked against the output schema; the
 * definition's render is skipped, its projectContent and the post-execute stages still run.
 */
export const withContent = <V>(value: V, content: ContentPart[]): WithContent<V> => ({
  [RENDERED]: true,
  value,
  content,
});

export const isWithContent = (output: unknown): output is WithContent<unknown> =>
  typeof output === 'object' && output !== null && (output as { [RENDERED]?: true })[RENDERED] === true;
