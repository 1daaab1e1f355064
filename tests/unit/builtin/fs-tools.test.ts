// The builtin file tools as the model uses them: through the registry's pipeline, against the
// memory provider's file system.

import { beforeEach, describe, expect, it } from 'vitest';
import { createMemoryProvider } from '../../../host/sandbox/memory/index.ts';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import { strReplaceEditorTool } from '../../../host/tools/builtin/index.ts';
import { createRegistry, type ToolResult, type ToolScope } from '../../../host/tools/index.ts';
import { standardSandboxTools } from './standard-tools.ts';

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

  it('counts lines as before: a final newline ends the last line, an empty file has none', async () => {
    await sandbox.fs.writeFile('n.txt', 'a\n\n');
    expect((await call('read', { file_path: 'n.txt' })).value).toMatchObject({
      content: 'a\n',
      totalLines: 2,
    });
    await sandbox.fs.writeFile('e.txt', '');
    expect(text(await call('read', { file_path: 'e.txt' }))).toBe('(/workspace/e.txt is empty)');
    await sandbox.fs.writeFile('u.txt', Buffer.from([0x61, 0xff, 0x0a, 0x62]));
    expect((await call('read', { file_path: 'u.txt', offset: 2 })).value).toMatchObject({
      content: 'b',
      totalLines: 2,
    });
  });

  it('cuts very long lines', async () => {
    await sandbox.fs.writeFile('long.txt', `${'x'.repeat(5000)}\n`);
    expect(text(await call('read', { file_path: 'long.txt' }))).toMatch(/x{2000} \[line cut\]$/);
  });

  it('asks the sandbox once: the stat comes with the bytes', async () => {
    await sandbox.fs.writeFile('a.txt', 'one\n');
    const asked: string[] = [];
    for (const name of Object.keys(sandbox.fs) as Array<keyof typeof sandbox.fs>) {
      const method = sandbox.fs[name];
      if (typeof method !== 'function') continue;
      Object.assign(sandbox.fs, {
        [name]: (...args: unknown[]) => {
          asked.push(name);
          return (method as (...a: unknown[]) => unknown).apply(sandbox.fs, args);
        },
      });
    }
    expect(text(await call('read', { file_path: 'a.txt' }))).toBe('1\tone');
    expect(asked).toEqual(['readWithStat']);
  });

  it('refuses a directory and a file over its limit with what to use instead', async () => {
    await sandbox.fs.mkdir('src');
    const dir = await call('read', { file_path: 'src' });
    expect(dir.error?.code).toBe('NOT_A_FILE');
    expect(text(dir)).toBe('Error: src is a directory; use glob or bash ls to list it.');
    await sandbox.fs.writeFile('huge.txt', Buffer.alloc(10 * 1024 * 1024 + 1, 'a'));
    const huge = await call('read', { file_path: 'huge.txt' });
    expect(huge.error?.code).toBe('FILE_TOO_LARGE');
    expect(text(huge)).toBe(
      'Error: huge.txt has 10485761 bytes, more than read handles (10485760); use bash (head, sed -n, rg) to look into it.',
    );
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

  it('edit refuses a replacement that would grow the file past the edit limit, before building it', async () => {
    await sandbox.fs.writeFile('a.txt', 'a'.repeat(1 << 20));
    const result = await call('edit', {
      file_path: 'a.txt',
      old_string: 'a',
      new_string: 'b'.repeat(100_000),
      replace_all: true,
    });
    expect(result.error?.code).toBe('FILE_TOO_LARGE');
    expect(text(result)).toMatch(/^Error: The edit would make a.txt 104857600000 characters long/);
    expect((await sandbox.fs.readFile('a.txt')).length).toBe(1 << 20);
  });

  it('edit refuses a file past the edit limit with what to use instead', async () => {
    await sandbox.fs.writeFile('huge.txt', Buffer.alloc(10 * 1024 * 1024 + 1, 'a'));
    const result = await call('edit', { file_path: 'huge.txt', old_string: 'a', new_string: 'b' });
    expect(result.error?.code).toBe('FILE_TOO_LARGE');
    expect(text(result)).toMatch(/more than the editing tools handle \(10485760\); use bash/);
  });

  it('edit replace_all replaces every occurrence', async () => {
    await sandbox.fs.writeFile('r.txt', 'x-x-x\n');
    const result = await call('edit', {
      file_path: 'r.txt',
      old_string: 'x',
      new_string: 'yy',
      replace_all: true,
    });
    expect(text(result)).toBe('Edited /workspace/r.txt: 3 replacements');
    expect((await sandbox.fs.readFile('r.txt')).toString()).toBe('yy-yy-yy\n');
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

  // Issue 10: an empty old_str looped forever on the API's event loop (countOccurrences(text, '')).
  it('refuses an empty old_str, and an old_str equal to new_str, leaving the file as it was', async () => {
    await sandbox.fs.writeFile('a.txt', 'abc\n');
    const empty = await call('str_replace_editor', {
      command: 'str_replace',
      path: '/workspace/a.txt',
      old_str: '',
      new_str: 'x',
    });
    expect(empty.error?.code).toBe('INVALID_ARGUMENTS');
    expect(text(empty)).toMatch(/^Error: old_str is empty; give the exact text to replace/);
    const same = await call('str_replace_editor', {
      command: 'str_replace',
      path: 'a.txt',
      old_str: 'abc',
      new_str: 'abc',
    });
    expect(text(same)).toBe('Error: old_str and new_str are the same; no replacement was performed.');
    expect((await sandbox.fs.readFile('a.txt')).toString()).toBe('abc\n');
  });

  it('views at most 2000 lines, cuts long lines and says how to see more', async () => {
    await sandbox.fs.writeFile('long.txt', `${'x'.repeat(3000)}\n${'line\n'.repeat(2500)}`);
    const shown = text(await call('str_replace_editor', { command: 'view', path: 'long.txt' }));
    const lines = shown.split('\n');
    expect(lines).toHaveLength(2001);
    expect(lines[0]).toBe(`     1\t${'x'.repeat(2000)} [line cut]`);
    expect(lines[2000]).toBe('[showing lines 1-2000 of 2501; view with view_range [2001, -1] to see more]');
    const tail = text(
      await call('str_replace_editor', { command: 'view', path: 'long.txt', view_range: [2500, -1] }),
    );
    expect(tail).toBe('  2500\tline\n  2501\tline');
  });

  it('lists at most 1000 entries of a directory', async () => {
    for (let i = 0; i < 1005; i++) await sandbox.fs.writeFile(`d/f${String(i).padStart(4, '0')}`, '');
    const lines = text(await call('str_replace_editor', { command: 'view', path: 'd' })).split('\n');
    expect(lines).toHaveLength(1004);
    expect(lines.slice(1, 3)).toEqual(['/workspace/d/', '/workspace/d/f0000']);
    expect(lines.at(-1)).toBe(
      '[listing cut after 1000 entries; view a subdirectory, or use bash ls or find]',
    );
  });

  it('inserts at the top, in the middle and after the last line', async () => {
    await sandbox.fs.writeFile('i.txt', 'a\nb\n');
    await call('str_replace_editor', { command: 'insert', path: 'i.txt', insert_line: 1, new_str: 'x\ny' });
    expect((await sandbox.fs.readFile('i.txt')).toString()).toBe('a\nx\ny\nb\n');
    await call('str_replace_editor', { command: 'insert', path: 'i.txt', insert_line: 4, new_str: 'z' });
    expect((await sandbox.fs.readFile('i.txt')).toString()).toBe('a\nx\ny\nb\nz\n');
    expect(
      text(
        await call('str_replace_editor', { command: 'insert', path: 'i.txt', insert_line: 6, new_str: 'q' }),
      ),
    ).toBe(
      'Error: insert_line 6 is past the end of /workspace/i.txt, which has 5 lines; use a value from 0 to 5.',
    );
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
