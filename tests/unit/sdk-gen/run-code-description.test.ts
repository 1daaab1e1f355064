// run_code's model-facing description.
import { describe, expect, it } from 'vitest';
import { generateSdk, runCodeDescription, SDK_BANNER } from '../../../sdk-gen/index.ts';
import { catalogTools } from './fixtures/catalog.ts';

describe('runCodeDescription', () => {
  it('explains code mode, then carries the declarations in a ts fence', () => {
    const sdk = generateSdk(catalogTools).declarations;
    const text = runCodeDescription(sdk);
    expect(text).toContain('BODY of an async function');
    expect(text).toContain('await tools.<name>(args)');
    expect(text).toContain('Promise.all');
    expect(text).toContain('Types are not checked');
    expect(text.endsWith(`\`\`\`ts\n${sdk}\`\`\``)).toBe(true);
  });

  it('stays compact: the instructions are a small, fixed prefix', () => {
    const prefix = runCodeDescription('').split('```ts')[0] ?? '';
    expect(prefix.length).toBeLessThan(700);
  });

  it('uses a fence longer than any backtick run in the declarations', () => {
    const sdk = generateSdk([{ name: 't', description: 'has ```` inside', parameters: {} }]).declarations;
    const text = runCodeDescription(sdk);
    expect(text).toContain(`\`\`\`\`\`ts\n${SDK_BANNER}`);
    expect(text.endsWith('\n`````')).toBe(true);
  });
});
