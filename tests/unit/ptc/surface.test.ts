// What the model is shown in code mode: one run_code tool whose description carries the SDK.
import * as v from 'valibot';
import { afterAll, describe, expect, it } from 'vitest';
import { createIsolateHost } from '../../../host/isolates/index.ts';
import { defineTool } from '../../../host/tools/index.ts';
import { createSdkCache } from '../../../host/tools/ptc/index.ts';
import { setup, sleeper } from './helpers.ts';

// describe() never starts a run, but the executor needs a host; no worker is asked for work here.
const isolates = createIsolateHost({ workers: 1, prewarm: 0 });
afterAll(() => isolates.close());

const readFile = defineTool({
  name: 'read-file',
  description: 'Read a file from the workspace.',
  parameters: v.object({ path: v.pipe(v.string(), v.description('Path to read')) }),
  output: { schema: v.object({ text: v.string() }) },
  execute: () => ({ text: '' }),
});

describe('code-mode surface', () => {
  it('mode code shows exactly run_code, with the generated SDK in its description', () => {
    const { scope } = setup(isolates);
    scope.register(readFile);
    scope.register(sleeper('grep', true).definition);
    const surface = scope.surface('code');
    expect(surface.map((s) => s.name)).toEqual(['run_code']);
    const [runCode] = surface;
    expect(runCode?.parameters).toMatchObject({ type: 'object', required: ['code', 'description'] });
    expect(
      Object.keys((runCode?.parameters as { properties?: object } | undefined)?.properties ?? {}),
    ).toEqual(['code', 'description']);
    // The non-identifier name is bound to a valid identifier; the SDK declares both tools with their docs.
    expect(runCode?.description).toContain('declare const tools');
    expect(runCode?.description).toContain('Read a file from the workspace.');
    expect(runCode?.description).toMatch(/read_file\(args: ReadFileInput\): Promise<ReadFileOutput>;/);
    expect(runCode?.description).toMatch(/grep\(args: GrepInput\): Promise<string>;/);
  });

  it('mode both shows the native schemas followed by run_code', () => {
    const { scope } = setup(isolates);
    scope.register(readFile);
    scope.register(sleeper('grep', true).definition);
    expect(scope.surface('both').map((s) => s.name)).toEqual(['read-file', 'grep', 'run_code']);
    expect(scope.surface('native').map((s) => s.name)).toEqual(['read-file', 'grep']);
  });

  it('a tool the agent is restricted from disappears from the SDK', () => {
    const { preset, scope } = setup(isolates);
    preset.register(readFile);
    preset.register(sleeper('grep', true).definition);
    scope.restrict({ deny: ['grep'] });
    const [runCode] = scope.surface('code');
    expect(runCode?.description).toContain('read_file(');
    expect(runCode?.description).not.toContain('grep(');
  });

  it('the SDK is generated once per tool list and again when a schema changes', () => {
    const cache = createSdkCache();
    const a = sleeper('a', true).definition;
    const first = cache.get([a, readFile]);
    expect(cache.get([a, readFile])).toBe(first);
    expect(cache.get([sleeper('a', true).definition, readFile])).toBe(first); // same content, new objects
    expect(cache.get([readFile, a])).not.toBe(first); // order is part of the text
    const changed = defineTool({
      name: 'read-file',
      description: 'Read a file, differently.',
      parameters: v.object({ path: v.string() }),
      output: { schema: v.string() },
      execute: () => '',
    });
    expect(cache.get([a, changed]).description).toContain('Read a file, differently.');
  });

  // WAS A BUG: bounded by count only, the cache (the API process's) kept 32 descriptions however
  // big, and every distinct tool's content text: an MCP server listing new big schemas again and
  // again grew it (400 distinct 200 KB tools: 73 MiB; after: 8 MiB).
  it('lets descriptions go past its size bound, however few', () => {
    const cache = createSdkCache();
    const words = Array.from({ length: 3_000 }, (_, i) => `word-${i}-${'w'.repeat(1000)}`).join(' ');
    const big = (n: number) =>
      defineTool({
        name: `big-${n}`,
        description: words,
        parameters: v.object({ path: v.string() }),
        output: { schema: v.string() },
        execute: () => '',
      });
    const first = cache.get([big(0)]);
    expect(first.description.length).toBeGreaterThan(3_000_000);
    expect(cache.get([big(0)])).toBe(first);
    for (let n = 1; n <= 5; n++) cache.get([big(n)]); // 6 × 3 MB > 16 MiB
    expect(cache.get([big(0)])).not.toBe(first);
    expect(cache.get([readFile])).toBe(cache.get([readFile]));
  });
});
