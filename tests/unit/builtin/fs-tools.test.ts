// The builtin file tools as the model uses them: through the registry's pipeline, against the
// memory provider's file system.

import { beforeEach, describe, expect, it } from 'vitest';
import { createMemoryProvider } from '../../../host/sandbox/memory/index.ts';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import { standardSandboxTools, strReplaceEditorTool } from '../../../host/tools/builtin/index.ts';
import { createRegistry, type ToolResult, type ToolScope } from '../../../host/tools/index.ts';

let sandbox: Sandbox;
let scope: ToolScope;

const call = async (name: string, args: Record<string, unknown>): Promise<ToolResult> => {
  const [result] = await scope.execute([{ id: 'c1', name, arguments: args }], {
    agent: { id: 'agent-1', sessionId: 'session-1', services: { sandbox } },
    log: null,
  });
  return result!;
};
const text = (result: ToolResult): string =>
  result.content.map((p) => (p.type === 'text' ? p.text : `[image ${p.mimeType}]`)).join('');

beforeEach(async () => {
  sandbox = await createMemoryProvider().create({ tenantId: 't', agentId: 'agent-1' });
  const registry = createRegistry();
  for (const tool of [...standardSandboxTools(), strReplaceEditorTool]) registry.global.register(tool);
  scope = registry.global.child('agent');
});

describe('read', () => {
  it('shows numbered lines and says how to read on when the range is cut', async () => {
    await sandbox.fs.writeFile('a.txt', 'one\ntwo\nthree\nfour\n');
    const result = await call('read', { file_path: 'a.txt', offset: 2, limit: 2 });
    expect(result.ok).toBe(true);
    expect(text(result)).toBe('2\ttwo\n3\tthree\n[showing lines 2-3 of 4; use offset 4 to read on]');
    expect(result.value).toMatchObject({ content: 'two\nthree', totalLines: 4 });
  });

  it('refuses a binary file with a clear error', async () => {
    await sandbox.fs.writeFile('bin.dat', Buffer.from([1, 0, 2, 3]));
    const result = await call('read', { file_path: 'bin.dat' });
    expect(result.ok).toBe(false);
    expect(text(result)).toMatch(/^Error: bin.dat is a binary file/);
  });

  it('cuts very long lines', async () => {
    await sandbox.fs.writeFile('long.txt', `${'x'.repeat(5000)}\n`);
    expect(text(await call('read', { file_path: 'long.txt' }))).toMatch(/x{2000} \[line cut\]$/);
  });

  it('refuses paths outside the workspace', async () => {
    const result = await call('read', { file_path: '../../etc/passwd' });
    expect(result.ok).toBe(false);
    expect(result.error?.code).toBeDefined();
    expect(text(result)).toMatch(/^Error: /);
  });
});

describe('write and edit', () => {
  it('write creates parents and reports created vs replaced', async () => {
    expect(text(await call('write', { file_path: 'src/x.ts', content: 'let a = 1\n' }))).toMatch(
      /^Created \/workspace\/src\/x.ts/,
    );
    expect(text(await call('write', { file_path: 'src/x.ts', content: 'let a = 2\n' }))).toMatch(/^Replaced/);
    expect((await sandbox.fs.readFile('src/x.ts')).toString()).toBe('let a = 2\n');
  });

  it('edit replaces exactly one match', async () => {
    await sandbox.fs.writeFile('f.ts', 'const enabled = false\n');
    const result = await call('edit', {
      file_path: 'f.ts',
      old_string: 'enabled = false',
      new_string: 'enabled = true',
    });
    expect(result.ok).toBe(true);
    expect((await sandbox.fs.readFile('f.ts')).toString()).toBe('const enabled = true\n');
  });

  it('edit says when old_string is missing or not unique, and changes nothing', async () => {
    await sandbox.fs.writeFile('f.ts', 'a\na\n');
    expect(text(await call('edit', { file_path: 'f.ts', old_string: 'zzz', new_string: 'b' }))).toMatch(
      /^Error: old_string was not found/,
    );
    expect(text(await call('edit', { file_path: 'f.ts', old_string: 'a', new_string: 'b' }))).toMatch(
      /^Error: old_string appears 2 times/,
    );
    expect((await sandbox.fs.readFile('f.ts')).toString()).toBe('a\na\n');
    expect(
      text(await call('edit', { file_path: 'f.ts', old_string: 'a', new_string: 'b', replace_all: true })),
    ).toMatch(/2 replacements/);
  });
});

describe('glob and grep', () => {
  beforeEach(async () => {
    await sandbox.fs.writeFile('src/a.ts', 'export const registerTool = 1\n');
    await sandbox.fs.writeFile('src/deep/b.ts', 'registerTool()\n');
    await sandbox.fs.writeFile('README.md', 'registerTool docs\n');
  });

  it('glob finds files across directories', async () => {
    const result = await call('glob', { pattern: '**/*.ts' });
    expect(result.value).toEqual(['/workspace/src/a.ts', '/workspace/src/deep/b.ts']);
  });

  it('grep filters by include and prints path:line:text', async () => {
    const result = await call('grep', { pattern: 'registerTool', include: '*.ts' });
    expect(text(result).split('\n').sort()).toEqual([
      '/workspace/src/a.ts:1:export const registerTool = 1',
      '/workspace/src/deep/b.ts:1:registerTool()',
    ]);
  });

  it('say so when nothing matches', async () => {
    expect(text(await call('grep', { pattern: 'nothing-here' }))).toBe('No matches found');
    expect(text(await call('glob', { pattern: '*.rs' }))).toBe('No files found');
  });
});

describe('read_image', () => {
  it('returns an image part for a png, by its bytes', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
    await sandbox.fs.writeFile('pic.bin', png);
    const result = await call('read_image', { file_path: 'pic.bin' });
    expect(result.content).toEqual([{ type: 'image', mimeType: 'image/png', data: png.toString('base64') }]);
  });

  it('refuses a file that is not an image', async () => {
    await sandbox.fs.writeFile('x.png', 'hello');
    expect(text(await call('read_image', { file_path: 'x.png' }))).toMatch(/^Error: x.png is not a png/);
  });
});

describe('str_replace_editor', () => {
  it('creates, views a range, replaces and inserts', async () => {
    await call('str_replace_editor', { command: 'create', path: 'e.txt', file_text: 'a\nb\nc' });
    expect(
      text(await call('str_replace_editor', { command: 'view', path: 'e.txt', view_range: [2, 3] })),
    ).toBe('     2\tb\n     3\tc');
    await call('str_replace_editor', { command: 'str_replace', path: 'e.txt', old_str: 'b', new_str: 'B' });
    await call('str_replace_editor', { command: 'insert', path: 'e.txt', insert_line: 0, new_str: 'top' });
    expect((await sandbox.fs.readFile('e.txt')).toString()).toBe('top\na\nB\nc');
  });

  it('names the arguments a command is missing', async () => {
    expect(text(await call('str_replace_editor', { command: 'insert', path: 'e.txt' }))).toBe(
      'Error: insert needs insert_line, new_str.',
    );
  });
});

describe('bash without a real shell', () => {
  it('fails with a clear error on a provider that cannot exec', async () => {
    const result = await call('bash', { command: 'true', description: 'nothing' });
    expect(result.ok).toBe(false);
    expect(text(result)).toMatch(/^Error: exec is not supported by the memory provider/);
  });
});
