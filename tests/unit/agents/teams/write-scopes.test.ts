// Write scopes are enforced by the pipeline: while an agent holds an in_progress task with write
// scopes, write, edit and str_replace_editor may only change files inside them, root calls and
// the inner tools.* calls of run_code programs alike; `..`, absolute spellings and paths outside
// the workspace do not escape; the denial (WRITE_SCOPE) names the task and its scopes. An agent
// holding no scoped task is not confined, and bash is not confined at all (documented).
// The composed service (assembleAgents) over the memory sandbox and a real isolate host.
import { afterAll, describe, expect, it } from 'vitest';
import { writeScopesGuard, writeScopesLoader } from '../../../../host/teams/board/guard.ts';
import type { WriteBounds } from '../../../../host/teams/board/types.ts';
import { strReplaceEditorTool } from '../../../../host/tools/builtin/index.ts';
import { createRegistry, type ToolCall, type ToolResult } from '../../../../host/tools/index.ts';
import { composedService } from '../../../helpers/composed.ts';

const { agents, store, commands, tenant, close } = await composedService();
afterAll(close);

let n = 0;
const write = (file_path: string): ToolCall => ({
  id: `w${++n}`,
  name: 'write',
  arguments: { file_path, content: 'x' },
});
const codes = (results: ToolResult[]) => results.map((r) => r.error?.code ?? 'ok');

describe('write scopes', () => {
  it('confine the writes of the task holder, inner calls of programs too, until it completes', async () => {
    const agent = await agents.create(tenant, { preset: 'standard', mode: 'both', teams: true });
    const call = (calls: ToolCall[]) => agents.call(agent, calls, { signal: new AbortController().signal });
    // Holding nothing: not confined.
    expect(codes(await call([write('other/free.txt')]))).toEqual(['ok']);

    const [created] = await call([
      {
        id: 'c',
        name: 'team_task_create',
        arguments: { subject: 'Parser', description: 'Write it', write_scopes: ['src/', 'docs/*.md'] },
      },
    ]);
    expect(created?.value).toMatchObject({ task_id: '1', write_scopes: ['src', 'docs/*.md'] });
    // Created but not held: still not confined.
    expect(codes(await call([write('other/still-free.txt')]))).toEqual(['ok']);
    await call([
      {
        id: 'k',
        name: 'team_task_update',
        arguments: { task_id: '1', expected_revision: 1, action: 'claim' },
      },
    ]);

    const inside = await call([
      write('src/a.ts'),
      write('/workspace/src/deep/b.ts'),
      write('./src/../src/c.ts'),
      write('docs/readme.md'),
      { id: 'e', name: 'edit', arguments: { file_path: 'src/a.ts', old_string: 'x', new_string: 'y' } },
    ]);
    expect(codes(inside)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);

    const outside = await call([
      write('other/b.txt'),
      write('src/../other/c.txt'),
      write('/workspace/other/d.txt'),
      write('docs/sub/e.md'),
      write('../escape.txt'),
      write('/etc/passwd'),
      write('srcfoo/f.ts'),
      {
        id: 'e2',
        name: 'edit',
        arguments: { file_path: 'other/free.txt', old_string: 'x', new_string: 'y' },
      },
    ]);
    expect(codes(outside)).toEqual(Array(8).fill('WRITE_SCOPE'));
    expect(outside[0]?.content[0]).toMatchObject({
      text: expect.stringMatching(
        /^Error: write may not write "other\/b.txt": other\/b.txt is outside your write scopes\. .*task 1 \("Parser"\): src, docs\/\*\.md/,
      ),
    });
    expect(outside[5]?.error?.message).toMatch(/outside the workspace/);
    const sandbox = await agents.sandbox(agent);
    expect(await sandbox.fs.exists('other/b.txt')).toBe(false);
    expect(await sandbox.fs.exists('other/c.txt')).toBe(false);

    // Inside a program: the inner tools.write calls pass the same guard.
    const [program] = await call([
      {
        id: 'p',
        name: 'run_code',
        arguments: {
          description: 'writes',
          code: `
            const tryWrite = async (file_path) => {
              try { await tools.write({ file_path, content: 'x' }); return 'ok'; }
              catch (error) { return String(error.message ?? error); }
            };
            return [await tryWrite('src/from-code.ts'), await tryWrite('other/from-code.ts')];`,
        },
      },
    ]);
    const [ok, refused] = (program?.value as { value: string[] } | undefined)?.value ?? [];
    expect(ok).toBe('ok');
    expect(refused).toMatch(/write may not write "other\/from-code.ts".*task 1/);
    const inner = (await store.events.list(agent.sessionId))
      .filter((e) => e.type === 'tool.result' && e.parentCallId === 'p')
      .map((e) => (e.data as { error?: { code: string } }).error?.code ?? 'ok');
    expect(inner).toEqual(['ok', 'WRITE_SCOPE']);

    // bash is not confined by path (a shell can write anywhere): it runs.
    const [bash] = await call([
      { id: 'b', name: 'bash', arguments: { command: 'touch other/x', description: 'touch' } },
    ]);
    expect(bash?.ok).toBe(true);
    expect(commands).toContain('touch other/x');

    // Completed: no longer held, no longer confined.
    await call([
      {
        id: 'd',
        name: 'team_task_update',
        arguments: { task_id: '1', expected_revision: 2, action: 'complete' },
      },
    ]);
    expect(codes(await call([write('other/after.txt')]))).toEqual(['ok']);
  });

  it("str_replace_editor's edits are confined, its view is not", async () => {
    const registry = createRegistry({});
    registry.global.register(strReplaceEditorTool);
    registry.global.on('tools/pre-execute', writeScopesLoader);
    registry.global.guard(writeScopesGuard);
    const bounds: WriteBounds = { held: [{ taskId: '4', subject: 'Docs', scopes: ['docs'] }], grants: [] };
    const agent = { id: 'a', sessionId: 's', services: { writeScopes: async () => bounds } };
    const results = await registry.global.execute(
      [
        { id: '1', name: 'str_replace_editor', arguments: { command: 'view', path: 'src' } },
        {
          id: '2',
          name: 'str_replace_editor',
          arguments: { command: 'create', path: 'src/x', file_text: 'x' },
        },
        {
          id: '3',
          name: 'str_replace_editor',
          arguments: { command: 'insert', path: 'src/x', insert_line: 0, new_str: 'x' },
        },
        {
          id: '4',
          name: 'str_replace_editor',
          arguments: { command: 'create', path: 'docs/x', file_text: 'x' },
        },
      ],
      { agent },
    );
    // view and the in-scope create pass the guard (and fail later, for want of a sandbox).
    expect(codes(results)).toEqual([
      'SANDBOX_UNAVAILABLE',
      'WRITE_SCOPE',
      'WRITE_SCOPE',
      'SANDBOX_UNAVAILABLE',
    ]);
  });
});
