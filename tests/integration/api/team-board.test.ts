// Issue 16 part B through the public API, on a real Docker sandbox: an agent created with
// `teams: true` plays the client of its team (today a team of one: the default directory makes
// every agent the lead of its own team). Three tasks, the third blocked by the first; claiming a
// ready task confines the holder's writes to the task's write scopes (root calls and run_code's
// inner calls; `..`, absolute paths and a symlink do not escape); completing it makes the dependent
// ready; team_task_list({ ready: true }) shows the truth at each step, and every change is a
// `team.task` event on the lead's log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Harness, type Loose, startHarness, text } from '../security/harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ isolateWorkers: 1 });
});
afterAll(() => h?.close());

describe('the team task board over HTTP', () => {
  it('tracks dependencies and readiness and confines the holder to its write scopes', async () => {
    const lead = await h.agent(h.keyA, { preset: 'standard', mode: 'both', teams: true });
    const plain = await h.agent(h.keyA, { preset: 'standard' });
    const names = async (id: string) =>
      (await h.http(h.keyA, 'GET', `/v1/agents/${id}/tools`)).json.tools.map((t: Loose) => t.name);
    expect(await names(lead)).toEqual(
      expect.arrayContaining(['team_task_create', 'team_task_get', 'team_task_list', 'team_task_update']),
    );
    expect(await names(plain)).not.toContain('team_task_list');

    let n = 0;
    const call = async (name: string, args: Record<string, unknown>): Promise<Loose> =>
      (await h.calls(h.keyA, lead, [[`c${++n}`, name, args]]))[0];
    const ready = async (): Promise<string[]> =>
      (await call('team_task_list', { ready: true })).value.tasks.map((t: Loose) => t.task_id);

    const parser = await call('team_task_create', {
      subject: 'Parser',
      description: 'Write the parser in src/parser.',
      write_scopes: ['src/parser/'],
    });
    expect(parser.value).toMatchObject({
      task_id: '1',
      revision: 1,
      ready: true,
      write_scopes: ['src/parser'],
    });
    await call('team_task_create', {
      subject: 'Docs',
      description: 'Document it.',
      write_scopes: ['docs/**/*.md'],
    });
    const integrate = await call('team_task_create', {
      subject: 'Integrate',
      description: 'Wire the parser in.',
      blocked_by: ['1'],
    });
    expect(integrate.value).toMatchObject({ task_id: '3', ready: false, open_blockers: ['1'] });
    expect(await ready()).toEqual(['1', '2']);

    // The blocked task cannot be claimed; the ready one can.
    const blocked = await call('team_task_update', { task_id: '3', expected_revision: 1, action: 'claim' });
    expect(blocked.error.code).toBe('TASK_BLOCKED');
    const claimed = await call('team_task_update', { task_id: '1', expected_revision: 1, action: 'claim' });
    expect(claimed.value).toMatchObject({ status: 'in_progress', owner: lead, revision: 2 });
    expect(text(claimed)).toMatch(/^Claimed #1 \[in_progress\] Parser/);
    expect(await ready()).toEqual(['2']);

    // Inside the scope: allowed. Outside, however spelt: WRITE_SCOPE naming the task and scopes.
    const inside = await call('write', { file_path: 'src/parser/index.ts', content: 'export {}\n' });
    expect(inside.ok).toBe(true);
    for (const file_path of [
      'README.md',
      'src/parser/../../escape.txt',
      '/workspace/docs/a.md',
      '../x',
      '/etc/passwd',
    ]) {
      const denied = await call('write', { file_path, content: 'x' });
      expect(denied.error?.code, file_path).toBe('WRITE_SCOPE');
      expect(text(denied), file_path).toMatch(/task 1 \("Parser"\): src\/parser/);
    }
    const edit = await call('edit', {
      file_path: 'src/parser/index.ts',
      old_string: 'export {}',
      new_string: 'export const x = 1;',
    });
    expect(edit.ok).toBe(true);
    // A symlink inside the scope that leads outside it does not let a write through.
    const linked = await h.bash(h.keyA, lead, 'mkdir -p docs && ln -s ../../docs src/parser/out && echo ok');
    expect(text(linked)).toBe('ok');
    const through = await call('write', { file_path: 'src/parser/out/leak.md', content: 'x' });
    expect(through.error?.code).toBe('WRITE_SCOPE');
    expect(text(through)).toMatch(/src\/parser\/out is a symlink/);
    // Inner calls of a program pass the same guard.
    const program = await call('run_code', {
      description: 'write twice',
      code: `
        const attempt = async (file_path) => {
          try { await tools.write({ file_path, content: 'x' }); return 'ok'; }
          catch (error) { return String(error.message ?? error); }
        };
        return [await attempt('src/parser/gen.ts'), await attempt('notes.txt')];`,
    });
    expect(program.value.value[0]).toBe('ok');
    expect(program.value.value[1]).toMatch(/may not write "notes.txt"/);
    const files = await h.bash(
      h.keyA,
      lead,
      'ls README.md notes.txt docs/leak.md ../escape.txt 2>/dev/null | wc -l',
    );
    expect(text(files)).toBe('0');

    // Completing the task makes its dependent ready and lifts the confinement.
    const stale = await call('team_task_update', { task_id: '1', expected_revision: 1, action: 'complete' });
    expect(stale.error).toMatchObject({
      code: 'REVISION_CONFLICT',
      message: expect.stringMatching(/revision 2/),
    });
    const done = await call('team_task_update', { task_id: '1', expected_revision: 2, action: 'complete' });
    expect(done.value).toMatchObject({ status: 'completed', revision: 3 });
    expect(await ready()).toEqual(['2', '3']);
    expect((await call('write', { file_path: 'README.md', content: '# free\n' })).ok).toBe(true);

    // Every change is on the lead's log.
    const events = await h.http(h.keyA, 'GET', `/v1/agents/${lead}/events`);
    const board = events.json.events.filter((e: Loose) => e.type === 'team.task');
    expect(board.map((e: Loose) => `${e.data.action} ${e.data.task.task_id}`)).toEqual([
      'create 1',
      'create 2',
      'create 3',
      'claim 1',
      'complete 1',
    ]);
  });
});
