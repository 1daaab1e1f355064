// JSDoc text: nothing in a description can end the comment, and every line break is a line.
import { describe, expect, it } from 'vitest';
import { generateSdk } from '../../../sdk-gen/index.ts';
import { defaultText, docComment, docLines } from '../../../sdk-gen/jsdoc.ts';

describe('docLines', () => {
  it('escapes comment terminators', () => {
    expect(docLines('a */ b **/ c')).toEqual(['a *\\/ b **\\/ c']);
  });

  it('splits on every kind of line break and trims blank edges', () => {
    expect(docLines('\n\na\r\nb\rc\u2028d\u2029e  \n\n')).toEqual(['a', 'b', 'c', 'd', 'e']);
  });
});

describe('docComment', () => {
  it('uses one line when it can', () => {
    expect(docComment(['x'], '  ')).toBe('  /** x */\n');
    expect(docComment(['x', '', 'y'], '')).toBe('/**\n * x\n *\n * y\n */\n');
    expect(docComment([], '')).toBe('');
  });
});

describe('defaultText', () => {
  it('prints JSON, truncates long values and skips values JSON cannot print', () => {
    expect(defaultText(false)).toBe('false');
    expect(defaultText({ a: '*/' })).toBe('{"a":"*\\/"}');
    expect(defaultText('x'.repeat(200))).toBe(`"${'x'.repeat(119)}…`);
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    expect(defaultText(circular)).toBeUndefined();
    expect(defaultText(10n)).toBeUndefined();
    expect(defaultText(undefined)).toBeUndefined();
  });
});

describe('generated comments', () => {
  it('never close early, whatever the descriptions say', () => {
    const sdk = generateSdk([
      {
        name: 't',
        description: '*/ x /* y */',
        parameters: {
          type: 'object',
          properties: { a: { type: 'string', description: '*/', default: '*/' } },
        },
      },
    ]);
    // Every comment opener is followed by exactly one closer before the next opener.
    const comments = sdk.declarations.match(/\/\*\*[\s\S]*?\*\//g) ?? [];
    expect(comments.length).toBe(2);
    for (const comment of comments) expect(comment.slice(3, -2)).not.toContain('*/');
  });
});
