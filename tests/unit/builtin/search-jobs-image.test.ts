// glob, grep, job_output and read_image as issue 17 found them wanting: a cut said only when
// something was cut, grep skipping hidden and ignored files, job_output showing the newest output
// with offsets to page, read_image's bytes once in what the log keeps.

import { describe, expect, it } from 'vitest';
import { createMemoryProvider, type MemoryRun } from '../../../host/sandbox/memory/index.ts';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import { builtinTools, LIMITS } from '../../../host/tools/builtin/index.ts';
import { createRegistry, type ToolResult } from '../../../host/tools/index.ts';

const setup = async (run?: MemoryRun) => {
  const sandbox: Sandbox = await createMemoryProvider({
    ...(run ? { run } : {}),
    limits: { maxOutputBytes: 4 * 1024 * 1024 },
  }).create({ tenantId: 't', agentId: 'a' });
  const registry = createRegistry();
  for (const tool of builtinTools()) registry.global.register(tool);
  const scope = registry.global.child('agent');
  const call = async (name: string, args: Record<string, unknown>): Promise<ToolResult> =>
    (
      await scope.execute([{ id: 'c1', name, arguments: args }], {
        agent: { id: 'a', sessionId: 's', services: { sandbox } },
        log: null,
      })
    )[0]!;
  return { sandbox, call };
};
const text = (r: ToolResult): string => r.content.map((p) => (p.type === 'text' ? p.text : '')).join('');

describe('glob and grep say a cut only when something was cut', () => {
  it('exactly the limit is no cut; one more is', async () => {
    const { sandbox, call } = await setup();
    for (let i = 0; i < LIMITS.globResults; i++)
      await sandbox.fs.writeFile(`g/f${String(i).padStart(3, '0')}.ts`, 'hit\n');
    expect(text(await call('glob', { pattern: 'g/*.ts' }))).not.toMatch(/results cut/);
    expect(text(await call('grep', { pattern: 'hit', path: 'g' }))).not.toMatch(/matches cut/);
    await sandbox.fs.writeFile('g/zz.ts', 'hit\n');
    const glob = await call('glob', { pattern: 'g/*.ts' });
    expect(text(glob)).toMatch(/\n\[results cut at 500; use a narrower pattern or path\]$/);
    expect(glob.value).toHaveLength(500);
    expect(text(await call('grep', { pattern: 'hit', path: 'g' }))).toMatch(/\n\[matches cut at 500;/);
  });
});

describe('grep', () => {
  it('skips hidden and git-ignored files unless its path names them, and says so in its description', async () => {
    const { sandbox, call } = await setup();
    await sandbox.fs.writeFile('.gitignore', 'node_modules/\n');
    await sandbox.fs.writeFile('src/a.ts', 'needle\n');
    await sandbox.fs.writeFile('node_modules/x/index.js', 'needle\n');
    await sandbox.fs.writeFile('.env', 'needle\n');
    expect(text(await call('grep', { pattern: 'needle' }))).toBe('/workspace/src/a.ts:1:needle');
    expect(text(await call('grep', { pattern: 'needle', path: 'node_modules' }))).toBe(
      '/workspace/node_modules/x/index.js:1:needle',
    );
    const grep = builtinTools().find((t) => t.name === 'grep')!;
    expect(grep.description).toMatch(/Skips hidden files and directories and what \.gitignore/);
    expect(builtinTools().find((t) => t.name === 'glob')!.description).toMatch(/sorted by path/);
  });
});

describe('job_output', () => {
  const big = async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => {
      release = r;
    });
    const lines = Array.from({ length: 5000 }, (_, i) => `line ${String(i).padStart(5, '0')}\n`).join('');
    const env = await setup(async (io) => {
      io.stdout(lines);
      await held;
      return 0;
    });
    const started = await env.call('bash', { command: 'build', description: 'd', run_in_background: true });
    return { ...env, jobId: (started.value as { jobId: string }).jobId, release, size: lines.length };
  };

  it('shows the newest output by default and says which part, with the offset of earlier output', async () => {
    const { call, jobId, size, release } = await big();
    const r = await call('job_output', { job_id: jobId });
    const [, range, ...rest] = text(r).split('\n');
    expect(range).toBe(
      `[output bytes ${size - 30_000}-${size}, the newest; earlier output: offset ${Math.max(0, size - 60_000)}]`,
    );
    expect(rest.at(-2)).toBe('line 04999');
    expect(r.value).toMatchObject({ offset: size - 30_000, nextOffset: size, more: false });
    release();
  });

  it('pages from an offset', async () => {
    const { call, jobId, release } = await big();
    const first = await call('job_output', { job_id: jobId, offset: 0 });
    const [, range, line0] = text(first).split('\n');
    expect(range).toBe('[output bytes 0-30000; read on: offset 30000]');
    expect(line0).toBe('line 00000');
    expect(first.value).toMatchObject({ offset: 0, nextOffset: 30_000, more: true });
    release();
  });

  it('shows all of a short output', async () => {
    const env = await setup((io) => {
      io.stdout('done\n');
      return 0;
    });
    const started = await env.call('bash', { command: 'x', description: 'd', run_in_background: true });
    const r = await env.call('job_output', {
      job_id: (started.value as { jobId: string }).jobId,
      wait: true,
    });
    expect(text(r).split('\n').slice(1)).toEqual(['[all 5 bytes of output]', 'done', '']);
  });
});

describe('read_image', () => {
  it('keeps the bytes once: in the image part, not again in the value', async () => {
    const { sandbox, call } = await setup();
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    await sandbox.fs.writeFile('pic.png', png);
    const r = await call('read_image', { file_path: 'pic.png' });
    expect(r.content).toEqual([{ type: 'image', mimeType: 'image/png', data: png.toString('base64') }]);
    expect(r.value).toEqual({ file_path: '/workspace/pic.png', mimeType: 'image/png', size: png.length });
  });
});
