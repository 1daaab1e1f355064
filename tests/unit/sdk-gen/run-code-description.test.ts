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

  it('states the limits of a run: CPU for the own work, the wall clock with waiting included', () => {
    const text = runCodeDescription('', { cpuMs: 200, wallMs: 5_400_000, memoryMb: 32 });
    expect(text).toContain(
      "Limits of one run: 200 ms of CPU time for the program's own work, 32 MB of memory, and 1 h 30 min in all, time spent waiting on tools included (waiting costs no CPU time).",
    );
    const seconds = runCodeDescription('', { cpuMs: 1_500, wallMs: 90_000 });
    expect(seconds).toContain('1.5 s of CPU time');
    expect(seconds).toContain('and 90 s in all');
    expect(runCodeDescription('')).not.toContain('Limits');
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
