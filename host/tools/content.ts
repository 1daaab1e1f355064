// Model-facing content helpers: the default renderer of canonical values and the one error text
// format. Invariant: a failed call's content is exactly `Error: <message>`, nothing more.
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
