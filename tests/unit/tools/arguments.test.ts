// Arguments a tool does not have are refused, with the valid ones named, in the pipeline: for
// valibot tools, for JSON Schema tools that close their object, and on code mode's inner calls
// alike; a JSON Schema tool that leaves its object open keeps its extra arguments (issue 17 §2).
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { createRegistry, defineJsonSchemaTool, defineTool } from '../../../host/tools/index.ts';
import { agent, call } from './helpers.ts';

const grepLike = defineTool({
  name: 'grep',
  description: 'Search',
  parameters: v.object({
    pattern: v.string(),
    path: v.optional(v.string()),
    include: v.optional(v.string()),
  }),
  output: { schema: v.string() },
  execute: (args) => JSON.stringify(args),
});

const run = async (
  tool: Parameters<ReturnType<typeof createRegistry>['global']['register']>[0],
  args: unknown,
) => {
  const registry = createRegistry();
  registry.global.register(tool);
  const [result] = await registry.global.execute([call('1', tool.name, args)], { agent });
  return result!;
};

describe('unknown arguments', () => {
  it('a valibot tool refuses Claude Code-style extras instead of running without them', async () => {
    const result = await run(grepLike, { pattern: 'x', glob: '*.ts', '-i': true });
    expect(result.error?.code).toBe('INVALID_ARGUMENTS');
    expect(result.error?.message).toBe(
      'Invalid arguments for grep: grep has no arguments "glob", "-i" (grep takes pattern, path, include). Fix them and call again.',
    );
    expect((await run(grepLike, { pattern: 'x', include: '*.ts' })).ok).toBe(true);
  });

  it('says so for a tool without arguments, and names only a few of many extras, cut', async () => {
    const none = defineTool({
      name: 'job_list',
      description: 'List',
      parameters: v.object({}),
      output: { schema: v.string() },
      execute: () => '',
    });
    const many = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`${'k'.repeat(60)}${i}`, i]));
    const result = await run(none, many);
    expect(result.error?.message).toBe(
      `Invalid arguments for job_list: job_list has no arguments ${Array.from({ length: 5 }, () => `"${'k'.repeat(40)}…"`).join(', ')} and 4 more (job_list takes no arguments). Fix them and call again.`,
    );
  });

  it('a JSON Schema tool follows its own additionalProperties', async () => {
    const schema = { type: 'object', properties: { city: { type: 'string' } } };
    const open = defineJsonSchemaTool({
      name: 'open',
      description: 'd',
      parameters: schema,
      execute: (args) => args,
    });
    expect((await run(open, { city: 'Oslo', unit: 'C' })).value).toEqual({ city: 'Oslo', unit: 'C' });
    const closed = defineJsonSchemaTool({
      name: 'closed',
      description: 'd',
      parameters: { ...schema, additionalProperties: false },
      execute: (args) => args,
    });
    expect((await run(closed, { city: 'Oslo', unit: 'C' })).error?.message).toBe(
      'Invalid arguments for closed: closed has no argument "unit" (closed takes city). Fix them and call again.',
    );
  });

  it('a loose valibot object stays open', async () => {
    const loose = defineTool({
      name: 'loose',
      description: 'd',
      parameters: v.looseObject({ a: v.string() }),
      output: { schema: v.unknown() },
      execute: (args) => args,
    });
    expect((await run(loose, { a: 'x', b: 1 })).ok).toBe(true);
    expect(loose.parameters.additionalProperties).toBeUndefined();
  });

  it('an inner call (code mode, workflows, plugins) is refused the same way', async () => {
    const registry = createRegistry();
    registry.global.register(grepLike);
    registry.global.register(
      defineTool({
        name: 'outer',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.unknown() },
        execute: async (_args, exec) => (await exec.callTool('grep', { pattern: 'x', glob: '*.ts' })).error,
      }),
    );
    const [result] = await registry.global.execute([call('1', 'outer', {})], { agent });
    expect(result?.value).toMatchObject({ code: 'INVALID_ARGUMENTS' });
  });
});
