// The file tools' contract as models know it, run against every sandbox provider with a one-line
// test (memory: tests/unit/builtin/editor-contract.test.ts; docker: tests/integration/builtin/).
// Built from the public contracts models are trained on: Anthropic's text-editor tool (which
// str_replace_editor's schema follows), OpenHands' editor (its messages and cases: create never
// overwrites, ambiguous old_str names lines, a numbered snippet after each edit, view_range bounds)
// and Claude Code's Read/Edit/Write/Grep/Glob (unknown arguments are an error, not ignored).
// Cases that need a shell (a symlink made by the agent) run only where the provider has one.

import { nanoid } from 'nanoid';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Sandbox, SandboxProvider } from '../../../host/sandbox/types.ts';
import { builtinTools } from '../../../host/tools/builtin/index.ts';
import { createRegistry, type ToolResult, type ToolScope } from '../../../host/tools/index.ts';

export interface FileToolsTarget {
  provider: SandboxProvider;
  cleanup?: () => Promise<void>;
}

const text = (result: ToolResult): string =>
  result.content.map((p) => (p.type === 'text' ? p.text : `[image ${p.mimeType}]`)).join('');

export const runFileToolsContract = (name: string, target: () => Promise<FileToolsTarget>): void => {
  let t: FileToolsTarget;
  let sandbox: Sandbox;
  let scope: ToolScope;
  let dir: string;
  const agentId = `files-${nanoid(6)}`;

  const call = async (tool: string, args: Record<string, unknown>): Promise<ToolResult> => {
    const [result] = await scope.execute([{ id: 'c1', name: tool, arguments: args }], {
      agent: { id: 'agent-1', sessionId: 'session-1', services: { sandbox } },
      log: null,
    });
    return result!;
  };
  const editor = (args: Record<string, unknown>) => call('str_replace_editor', args);
  /** A path in this test's own directory of the workspace. */
  const at = (file: string): string => `${dir}/${file}`;
  const put = (file: string, content: string | Buffer) => sandbox.fs.writeFile(at(file), content);
  const content = async (file: string) => (await sandbox.fs.readFile(at(file))).toString('utf8');

  describe(`file tools contract: ${name}`, () => {
    beforeAll(async () => {
      t = await target();
      sandbox = await t.provider.create({ tenantId: 't-files', agentId });
      const registry = createRegistry();
      for (const tool of builtinTools()) registry.global.register(tool);
      scope = registry.global.child('agent');
    });
    afterAll(async () => {
      await t?.provider.destroy(agentId).catch(() => {});
      await t?.provider.close();
      await t?.cleanup?.();
    });
    beforeEach(() => {
      dir = `/workspace/c-${nanoid(8)}`;
    });

    describe('str_replace_editor view', () => {
      it('numbers lines as cat -n does, and a final newline is no extra line', async () => {
        await put('a.txt', 'one\ntwo\nthree\n');
        expect(text(await editor({ command: 'view', path: at('a.txt') }))).toBe(
          '     1\tone\n     2\ttwo\n     3\tthree',
        );
      });

      it('shows a view_range, to the end with -1, and clamps an end past the last line with a note', async () => {
        await put('a.txt', 'one\ntwo\nthree\n');
        expect(text(await editor({ command: 'view', path: at('a.txt'), view_range: [2, 3] }))).toBe(
          '     2\ttwo\n     3\tthree',
        );
        expect(text(await editor({ command: 'view', path: at('a.txt'), view_range: [3, -1] }))).toBe(
          '     3\tthree',
        );
        expect(text(await editor({ command: 'view', path: at('a.txt'), view_range: [2, 9] }))).toBe(
          `NOTE: ${at('a.txt')} has 3 lines; showing up to line 3.\n     2\ttwo\n     3\tthree`,
        );
      });

      it('refuses a view_range outside the file, naming the valid lines', async () => {
        await put('a.txt', 'one\ntwo\nthree\n');
        const past = await editor({ command: 'view', path: at('a.txt'), view_range: [4, 5] });
        expect(past.error?.code).toBe('INVALID_ARGUMENTS');
        expect(text(past)).toBe(
          `Error: view_range [4, 5] starts past the end: ${at('a.txt')} has 3 lines (view_range [1, 3]).`,
        );
        expect(text(await editor({ command: 'view', path: at('a.txt'), view_range: [0, 2] }))).toBe(
          'Error: view_range [0, 2] starts at 0; lines are numbered from 1.',
        );
        expect(text(await editor({ command: 'view', path: at('a.txt'), view_range: [3, 2] }))).toMatch(
          /^Error: view_range \[3, 2\] ends before it starts/,
        );
      });

      it('lists a directory two levels deep without hidden entries, and refuses a view_range on it', async () => {
        await put('d/x.ts', '');
        await put('d/sub/y.ts', '');
        await put('d/sub/deeper/z.ts', '');
        await put('d/sub/.secret', '');
        await put('d/.env', '');
        expect(text(await editor({ command: 'view', path: at('d') }))).toBe(
          [
            `Here's the files and directories up to 2 levels deep in ${at('d')}, excluding hidden items:`,
            `${at('d')}/`,
            `${at('d')}/sub/`,
            `${at('d')}/sub/deeper/`,
            `${at('d')}/sub/y.ts`,
            `${at('d')}/x.ts`,
            '',
            `1 hidden files/directories in this directory are excluded. You can use 'ls -la ${at('d')}' to see them.`,
          ].join('\n'),
        );
        const ranged = await editor({ command: 'view', path: at('d'), view_range: [1, 2] });
        expect(ranged.error?.code).toBe('INVALID_ARGUMENTS');
        expect(text(ranged)).toBe(
          `Error: view_range [1, 2] is for files; ${at('d')} is a directory. View it without view_range.`,
        );
      });

      it('caps its output and says which view_range shows the rest, naming no parameter it lacks', async () => {
        await put('wide.txt', `${'x'.repeat(99)}\n`.repeat(3000));
        const shown = text(await editor({ command: 'view', path: at('wide.txt') }));
        expect(shown.length).toBeLessThanOrEqual(30_000 + 200);
        const note = shown.split('\n').at(-1);
        expect(note).toMatch(
          /^\[showing lines 1-(\d+) of 3000; view with view_range \[\d+, -1\] to see more\]$/,
        );
        expect(shown).not.toMatch(/offset|length/);
      });

      it('views part of a file too large to load, reading only what it needs', async () => {
        const line = `${'y'.repeat(63)}\n`;
        await put('big.log', Buffer.from(`first\n${line.repeat(180_000)}last\n`)); // ~11.5 MB
        expect(text(await editor({ command: 'view', path: at('big.log'), view_range: [1, 2] }))).toBe(
          `     1\tfirst\n     2\t${'y'.repeat(63)}`,
        );
        const head = text(await editor({ command: 'view', path: at('big.log') }));
        expect(head.split('\n').at(-1)).toMatch(
          new RegExp(
            `^\\[showing lines 1-\\d+ of ${at('big.log')} \\(\\d+ bytes\\); view with view_range \\[\\d+, -1\\] to see more\\]$`,
          ),
        );
        expect(text(await editor({ command: 'view', path: at('big.log'), view_range: [180_002, -1] }))).toBe(
          '180002\tlast',
        );
        expect(text(await editor({ command: 'view', path: at('big.log'), view_range: [180_003, -1] }))).toBe(
          `Error: view_range [180003, -1] starts past the end: ${at('big.log')} has 180002 lines.`,
        );
      });

      it('says a path that does not exist does not exist', async () => {
        const result = await editor({ command: 'view', path: at('nope.txt') });
        expect(result.error?.code).toBe('FILE_NOT_FOUND');
        expect(text(result)).toBe(
          `Error: The path ${at('nope.txt')} does not exist. View its directory to find the right path, or make the file with create.`,
        );
      });

      it('refuses a binary file', async () => {
        await put('b.bin', Buffer.from([0x61, 0, 0x62]));
        expect((await editor({ command: 'view', path: at('b.bin') })).error?.code).toBe('BINARY_FILE');
        const large = Buffer.alloc(11 * 1024 * 1024, 0x61);
        large[100] = 0;
        await put('big.bin', large);
        expect((await editor({ command: 'view', path: at('big.bin'), view_range: [1, 1] })).error?.code).toBe(
          'BINARY_FILE',
        );
      });

      it('follows a symlink to a directory', async () => {
        if (!t.provider.flags.isolated) return; // the memory provider has no symlinks
        await put('real/inside.txt', 'hi\n');
        await sandbox.exec(`ln -s real ${at('link')}`, { cwd: dir });
        expect(
          text(await editor({ command: 'view', path: at('link') }))
            .split('\n')
            .slice(1),
        ).toEqual([`${at('link')}/`, `${at('link')}/inside.txt`]);
      });
    });

    describe('str_replace_editor create', () => {
      it('creates a file with its parents', async () => {
        const result = await editor({ command: 'create', path: at('n/new.txt'), file_text: 'hello\n' });
        expect(text(result)).toBe(`File created successfully at: ${at('n/new.txt')}`);
        expect(await content('n/new.txt')).toBe('hello\n');
      });

      it('never overwrites an existing file', async () => {
        await put('keep.txt', 'original\n');
        const result = await editor({ command: 'create', path: at('keep.txt'), file_text: 'new\n' });
        expect(result.error?.code).toBe('INVALID_ARGUMENTS');
        expect(text(result)).toBe(
          `Error: File already exists at: ${at('keep.txt')}. create does not overwrite files; view it, then change it with str_replace or insert.`,
        );
        expect(await content('keep.txt')).toBe('original\n');
      });
    });

    describe('str_replace_editor str_replace', () => {
      const ten = Array.from({ length: 10 }, (_, i) => `line ${i + 1}`).join('\n');

      it('replaces the one match and shows a numbered snippet of the edited region', async () => {
        await put('s.txt', `${ten}\n`);
        const result = await editor({
          command: 'str_replace',
          path: at('s.txt'),
          old_str: 'line 6',
          new_str: 'LINE six\nand more',
        });
        expect(text(result)).toBe(
          [
            `The file ${at('s.txt')} has been edited. Here's the result of running \`cat -n\` on a snippet of ${at('s.txt')}:`,
            '     2\tline 2',
            '     3\tline 3',
            '     4\tline 4',
            '     5\tline 5',
            '     6\tLINE six',
            '     7\tand more',
            '     8\tline 7',
            '     9\tline 8',
            '    10\tline 9',
            '    11\tline 10',
            'Review the changes and make sure they are as expected. Edit the file again if necessary.',
          ].join('\n'),
        );
        expect(await content('s.txt')).toBe(`${ten.replace('line 6', 'LINE six\nand more')}\n`);
      });

      it('names the lines of an ambiguous old_str and changes nothing', async () => {
        await put('dup.txt', 'x = 1\ny = 2\nx = 1\n\nx = 1\n');
        const result = await editor({
          command: 'str_replace',
          path: at('dup.txt'),
          old_str: 'x = 1',
          new_str: 'x = 3',
        });
        expect(result.error?.code).toBe('INVALID_ARGUMENTS');
        expect(text(result)).toBe(
          `Error: No replacement was performed: old_str occurs 3 times in ${at('dup.txt')}, on lines 1, 3 and 5. Include more surrounding lines to make it unique.`,
        );
        expect(await content('dup.txt')).toBe('x = 1\ny = 2\nx = 1\n\nx = 1\n');
      });

      it('says old_str was not found, with the path', async () => {
        await put('s.txt', `${ten}\n`);
        expect(
          text(await editor({ command: 'str_replace', path: at('s.txt'), old_str: 'line 11', new_str: 'x' })),
        ).toBe(
          `Error: No replacement was performed: old_str did not appear verbatim in ${at('s.txt')}. View the file and copy the text exactly, including whitespace and indentation.`,
        );
      });

      it('refuses an empty old_str and an old_str equal to new_str', async () => {
        await put('s.txt', 'abc\n');
        expect(
          (await editor({ command: 'str_replace', path: at('s.txt'), old_str: '', new_str: 'x' })).error
            ?.code,
        ).toBe('INVALID_ARGUMENTS');
        expect(
          text(await editor({ command: 'str_replace', path: at('s.txt'), old_str: 'abc', new_str: 'abc' })),
        ).toBe('Error: old_str and new_str are the same; no replacement was performed.');
        expect(await content('s.txt')).toBe('abc\n');
      });

      it('refuses a directory', async () => {
        await put('d/x', '');
        const result = await editor({ command: 'str_replace', path: at('d'), old_str: 'a', new_str: 'b' });
        expect(result.error?.code).toBe('NOT_A_FILE');
        expect(text(result)).toBe(
          `Error: The path ${at('d')} is a directory; str_replace works on files (view lists a directory).`,
        );
      });
    });

    describe('str_replace_editor insert', () => {
      it('inserts after a line and shows the edited region, numbered', async () => {
        await put('i.txt', 'a\nb\nc\n');
        const result = await editor({
          command: 'insert',
          path: at('i.txt'),
          insert_line: 1,
          new_str: 'x\ny',
        });
        expect(text(result)).toBe(
          [
            `The file ${at('i.txt')} has been edited. Here's the result of running \`cat -n\` on a snippet of ${at('i.txt')}:`,
            '     1\ta',
            '     2\tx',
            '     3\ty',
            '     4\tb',
            '     5\tc',
            'Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.',
          ].join('\n'),
        );
        expect(await content('i.txt')).toBe('a\nx\ny\nb\nc\n');
      });

      it('inserts at the top and after the last line; a final newline is no extra line', async () => {
        await put('i.txt', 'a\nb\n');
        await editor({ command: 'insert', path: at('i.txt'), insert_line: 0, new_str: 'top' });
        await editor({ command: 'insert', path: at('i.txt'), insert_line: 3, new_str: 'end' });
        expect(await content('i.txt')).toBe('top\na\nb\nend\n');
        const past = await editor({ command: 'insert', path: at('i.txt'), insert_line: 5, new_str: 'q' });
        expect(text(past)).toBe(
          `Error: insert_line 5 is past the end of ${at('i.txt')}, which has 4 lines; use a value from 0 to 4.`,
        );
        await put('open.txt', 'a\nb');
        await editor({ command: 'insert', path: at('open.txt'), insert_line: 2, new_str: 'c' });
        expect(await content('open.txt')).toBe('a\nb\nc');
        await put('empty.txt', '');
        await editor({ command: 'insert', path: at('empty.txt'), insert_line: 0, new_str: 'first' });
        expect(await content('empty.txt')).toBe('first\n');
      });
    });

    describe('arguments a tool does not have', () => {
      it('are refused with the valid ones named, for the editor and for grep', async () => {
        await put('a.ts', 'Needle\n');
        const view = await editor({ command: 'view', path: at('a.ts'), offset: 1, length: 5 });
        expect(view.error?.code).toBe('INVALID_ARGUMENTS');
        expect(text(view)).toBe(
          'Error: Invalid arguments for str_replace_editor: str_replace_editor has no arguments "offset", "length" (str_replace_editor takes command, path, file_text, insert_line, new_str, old_str, view_range). Fix them and call again.',
        );
        const grep = await call('grep', { pattern: 'needle', path: dir, glob: '*.ts', '-i': true });
        expect(text(grep)).toBe(
          'Error: Invalid arguments for grep: grep has no arguments "glob", "-i" (grep takes pattern, path, include). Fix them and call again.',
        );
      });
    });

    describe('job_output', () => {
      it('shows the newest output of a long job, and pages from an offset', async () => {
        if (!t.provider.flags.isolated) return; // jobs need a shell
        const started = await call('bash', {
          command: 'seq 1 20000',
          description: 'count',
          run_in_background: true,
        });
        const job_id = (started.value as { jobId: string }).jobId;
        const newest = text(await call('job_output', { job_id, wait: true, timeout_ms: 20_000 })).split('\n');
        expect(newest[1]).toBe('[output bytes 78894-108894, the newest; earlier output: offset 48894]');
        expect(newest.at(-2)).toBe('20000');
        const page = text(await call('job_output', { job_id, offset: 0 })).split('\n');
        expect(page.slice(1, 3)).toEqual(['[output bytes 0-30000; read on: offset 30000]', '1']);
      });
    });

    describe('edit (Claude Code Edit)', () => {
      it('names the lines of an ambiguous old_string', async () => {
        await put('e.ts', 'a()\nb()\na()\n');
        expect(
          text(await call('edit', { file_path: at('e.ts'), old_string: 'a()', new_string: 'c()' })),
        ).toBe(
          `Error: old_string appears 2 times in ${at('e.ts')}, on lines 1 and 3; add surrounding lines to make it unique, or set replace_all.`,
        );
      });
    });
  });
};
