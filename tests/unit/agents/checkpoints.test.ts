// Checkpoints per mutating call through the API over the memory provider (issue 36): a rollback
// across writes, edits, str_replace_editor changes and uploads restores every tracked file
// byte-exact to just before the call named, and later calls' too; a file changed outside the tools
// since refuses it (ROLLBACK_UNSAFE) and leaves everything as it was, unless it already is what the
// rollback restores; the bounds drop
// the oldest (CHECKPOINT_DROPPED); unknown ids and another tenant's agent answer 404.
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { pack } from 'tar-stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createCheckpointStore } from '../../../host/agents/checkpoints/store.ts';
import { createCheckpointTracker, INDEX_MAX_WEIGHT } from '../../../host/agents/checkpoints/tracker.ts';
import { type CheckpointBounds, withinOperator } from '../../../host/agents/checkpoints/types.ts';
import { SandboxError } from '../../../host/errors.ts';
import { type Loose, makeApi } from '../api/harness.ts';

const tarOf = async (files: Array<[name: string, body: string]>): Promise<Uint8Array> => {
  const p = pack();
  for (const [name, body] of files) p.entry({ name, mode: 0o644 }, body);
  p.finalize();
  return new Uint8Array(await buffer(p as never));
};

describe('checkpoints and rollback (memory provider)', () => {
  let dir: string;
  let api: Awaited<ReturnType<typeof makeApi>>;
  const bounds: CheckpointBounds = { maxBytes: 1024 * 1024, maxCount: 100 };

  let tracker: ReturnType<typeof createCheckpointTracker>;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-ckpt-'));
    bounds.maxBytes = 1024 * 1024;
    bounds.maxCount = 100;
    const checkpoints = createCheckpointTracker({
      store: createCheckpointStore(dir),
      boundsOf: async () => ({ ...bounds }),
    });
    tracker = checkpoints;
    api = await makeApi({}, { agents: { checkpoints } });
  });
  afterEach(async () => {
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  });

  let n = 0;
  /** One call; its id and result. */
  async function call(id: string, name: string, args: Loose): Promise<{ callId: string; result: Loose }> {
    const callId = `c${++n}`;
    const res = await api.call(api.keyA, id, [{ id: callId, name, arguments: args }]);
    expect(res.status).toBe(200);
    return { callId, result: res.json.results[0] };
  }
  const files = async (id: string): Promise<Record<string, string>> => {
    const sandbox = await api.agents.sandbox(await api.agents.get(api.tenantA, id));
    const out: Record<string, string> = {};
    const { paths } = await sandbox.fs.glob('**');
    for (const path of paths) out[path] = (await sandbox.fs.readFile(path)).toString('base64');
    return out;
  };
  const rollback = (id: string, callId: string, key = api.keyA) =>
    api.request(key, 'POST', `/v1/agents/${id}/rollback`, { callId });
  const checkpoints = async (id: string): Promise<Loose[]> =>
    (await api.request(api.keyA, 'GET', `/v1/agents/${id}/checkpoints`)).json.checkpoints;

  it('rolls back writes, edits, str_replace_editor and uploads byte-exact, newest first', async () => {
    const { id } = await api.createAgent(api.keyA);
    const states: Array<{ callId: string; before: Record<string, string> }> = [];
    const step = async (run: () => Promise<string>) => {
      const before = await files(id);
      states.push({ callId: await run(), before });
    };
    await step(async () => (await call(id, 'write', { file_path: 'a.txt', content: 'one\ntwo\n' })).callId);
    await step(
      async () =>
        (await call(id, 'edit', { file_path: 'a.txt', old_string: 'two', new_string: 'deux' })).callId,
    );
    await step(
      async () => (await call(id, 'write', { file_path: 'src/b.bin', content: '\u0000\u00ff bytes' })).callId,
    );
    await step(async () => {
      const tar = await tarOf([
        ['a.txt', 'from the archive'],
        ['src/c.txt', 'new in the archive'],
      ]);
      const res = await api.request(api.keyA, 'PUT', `/v1/agents/${id}/archive?path=.`, tar, {
        'Content-Type': 'application/x-tar',
      });
      expect(res.status).toBe(200);
      const list = await checkpoints(id);
      return list[list.length - 1].callId;
    });
    await step(
      async () =>
        (await call(id, 'edit', { file_path: 'src/c.txt', old_string: 'new', new_string: 'changed' })).callId,
    );
    await step(async () => {
      const res = await api.request(api.keyA, 'PUT', `/v1/agents/${id}/files?path=src/b.bin`, 'replaced', {
        'Content-Type': 'application/octet-stream',
      });
      expect(res.status).toBe(200);
      const list = await checkpoints(id);
      return list[list.length - 1].callId;
    });
    expect((await checkpoints(id)).map((c) => c.tool)).toEqual([
      'write',
      'edit',
      'write',
      'archive_upload',
      'edit',
      'file_upload',
    ]);
    expect((await checkpoints(id))[3].callId).toMatch(/^client:/);

    // Back to just before the archive upload: the upload and the two calls after it undone.
    const mid = states[3] as { callId: string; before: Record<string, string> };
    const back = await rollback(id, mid.callId);
    expect(back.status).toBe(200);
    expect(back.json.undone).toEqual(
      states
        .slice(3)
        .map((s) => s.callId)
        .reverse(),
    );
    expect(await files(id)).toEqual(mid.before);
    expect((await checkpoints(id)).length).toBe(3);
    // And to before the very first call: nothing of it left.
    const first = states[0] as { callId: string; before: Record<string, string> };
    expect((await rollback(id, first.callId)).status).toBe(200);
    expect(await files(id)).toEqual(first.before);
    expect(await checkpoints(id)).toEqual([]);
    // Rolled back: gone.
    const again = await rollback(id, first.callId);
    expect(again.status).toBe(404);
    expect(again.json.error.code).toBe('CHECKPOINT_NOT_FOUND');
  });

  it("str_replace_editor's create, str_replace and insert are tracked; view is not", async () => {
    const { id } = await api.createAgent(api.keyA, { preset: 'minimal' });
    const edit = (args: Loose) => call(id, 'str_replace_editor', args);
    const created = await edit({ command: 'create', path: 'notes.md', file_text: 'alpha\nbeta\n' });
    expect(created.result.ok).toBe(true);
    const replaced = await edit({
      command: 'str_replace',
      path: 'notes.md',
      old_str: 'beta',
      new_str: 'gamma',
    });
    const afterReplace = await files(id);
    await edit({ command: 'insert', path: 'notes.md', insert_line: 1, new_str: 'inserted' });
    await edit({ command: 'view', path: 'notes.md' });
    expect((await checkpoints(id)).map((c) => c.callId)).toHaveLength(3);
    const before = await rollback(id, replaced.callId);
    expect(before.status).toBe(200);
    expect((await files(id))['/workspace/notes.md']).toBe(Buffer.from('alpha\nbeta\n').toString('base64'));
    expect(afterReplace['/workspace/notes.md']).not.toBe((await files(id))['/workspace/notes.md']);
    expect((await rollback(id, created.callId)).json.removed).toEqual(['/workspace/notes.md']);
    expect(await files(id)).toEqual({});
  });

  it("a tracked call begun while a rollback restores reads its pre-image after the rollback's", async () => {
    const { id } = await api.createAgent(api.keyA);
    await call(id, 'write', { file_path: 'a.txt', content: 'old' });
    const sandbox = await api.agents.sandbox(await api.agents.get(api.tenantA, id));
    let release = (): void => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // A rollback stands in: a turn of the agent's index that restores a.txt while it holds it.
    const rolling = tracker.turn(id, async () => {
      await held;
      await sandbox.fs.writeFile('a.txt', 'restored');
      return { value: undefined };
    });
    const begun = tracker.begin(api.tenantA, id, sandbox, {
      callId: 'late',
      tool: 'write',
      paths: ['a.txt'],
    });
    release();
    await rolling;
    const end = await begun;
    await sandbox.fs.writeFile('a.txt', 'new');
    await end();
    expect((await rollback(id, 'late')).status).toBe(200);
    expect((await sandbox.fs.readFile('a.txt')).toString()).toBe('restored');
  });

  it('refuses when a tracked file changed since by something untracked, and changes nothing', async () => {
    const { id } = await api.createAgent(api.keyA);
    const w = await call(id, 'write', { file_path: 'a.txt', content: 'tracked' });
    await call(id, 'write', { file_path: 'b.txt', content: 'tracked too' });
    // Changed outside the tools (as bash would): untracked.
    const sandbox = await api.agents.sandbox(await api.agents.get(api.tenantA, id));
    await sandbox.fs.writeFile('a.txt', 'changed outside');
    const before = await files(id);
    const refused = await rollback(id, w.callId);
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatchObject({ code: 'ROLLBACK_UNSAFE', data: { path: '/workspace/a.txt' } });
    expect(await files(id)).toEqual(before);
    expect((await checkpoints(id)).length).toBe(2);
    // Already as the rollback leaves it (the client deleted the file the write created): nothing
    // would be lost, so it goes through.
    expect((await api.request(api.keyA, 'DELETE', `/v1/agents/${id}/files?path=a.txt`)).status).toBe(204);
    expect((await rollback(id, w.callId)).status).toBe(200);
    expect(await files(id)).toEqual({});
  });

  it.each([
    ['made a link out of the workspace', 'PATH_OUTSIDE_WORKSPACE'],
    ['moved away with its directory', 'FILE_NOT_FOUND'],
    ['under a directory replaced by a file', 'NOT_A_DIRECTORY'],
  ] as const)('a path %s between the check and the write answers ROLLBACK_UNSAFE', async (_, code) => {
    const { id } = await api.createAgent(api.keyA);
    await call(id, 'write', { file_path: 'a.txt', content: 'one' });
    const w = await call(id, 'write', { file_path: 'a.txt', content: 'two' });
    // The sandbox refuses the write as the path changed meanwhile makes it (docker: sandboxd).
    const sandbox = await api.agents.sandbox(await api.agents.get(api.tenantA, id));
    const writeFile = sandbox.fs.writeFile.bind(sandbox.fs);
    sandbox.fs.writeFile = async () => {
      throw new SandboxError(code, 'the path changed');
    };
    const refused = await rollback(id, w.callId);
    sandbox.fs.writeFile = writeFile;
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatchObject({ code: 'ROLLBACK_UNSAFE', data: { path: '/workspace/a.txt' } });
    // Nothing was dropped: asked again, it goes through.
    expect((await checkpoints(id)).length).toBe(2);
    expect((await rollback(id, w.callId)).status).toBe(200);
    expect(Buffer.from((await files(id))['/workspace/a.txt'] ?? '', 'base64').toString()).toBe('one');
  });

  it('keeps the newest within the bounds: the oldest dropped, a rollback through them refused', async () => {
    bounds.maxCount = 3;
    const { id } = await api.createAgent(api.keyA);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++)
      ids.push((await call(id, 'write', { file_path: 'a.txt', content: `v${i}` })).callId);
    expect((await checkpoints(id)).map((c) => c.callId)).toEqual(ids.slice(2));
    const dropped = await rollback(id, ids[0] as string);
    expect(dropped.status).toBe(409);
    expect(dropped.json.error.code).toBe('CHECKPOINT_DROPPED');
    expect((await rollback(id, ids[2] as string)).status).toBe(200);
    expect((await files(id))['/workspace/a.txt']).toBe(Buffer.from('v1').toString('base64'));

    // Bytes: a pre-image larger than the bound is not kept, and a rollback through it is refused.
    bounds.maxBytes = 4;
    const big = await call(id, 'write', { file_path: 'a.txt', content: 'a longer text' });
    const bigger = await call(id, 'write', { file_path: 'a.txt', content: 'longer still' });
    expect((await rollback(id, bigger.callId)).json.error.code).toBe('CHECKPOINT_DROPPED');
    expect((await rollback(id, big.callId)).status).toBe(200);
    expect((await files(id))['/workspace/a.txt']).toBe(Buffer.from('v1').toString('base64'));
  });

  it('an archive of more files than a checkpoint holds keeps none, and the index stays small', async () => {
    const { id } = await api.createAgent(api.keyA);
    const deep = Array.from({ length: 15 }, (_, i) => `${i}${'d'.repeat(199)}`).join('/');
    const upload = async (prefix: string, count: number) => {
      const tar = await tarOf(Array.from({ length: count }, (_, i) => [`${prefix}/${deep}/f${i}`, 'x']));
      const res = await api.request(api.keyA, 'PUT', `/v1/agents/${id}/archive?path=.`, tar, {
        'Content-Type': 'application/x-tar',
      });
      expect(res.status, res.text).toBe(200);
      return (await checkpoints(id)).at(-1) as Loose;
    };
    // 400 paths of 3 KB: over one call's share (CALL_MAX_WEIGHT), so nothing of it is read or kept.
    const many = await upload('many', 400);
    expect(many).toMatchObject({ tool: 'archive_upload', bytes: 0 });
    expect(many.paths).toHaveLength(1);
    const after = await call(id, 'write', { file_path: 'a.txt', content: 'later' });
    const refused = await rollback(id, many.callId);
    expect(refused.status).toBe(409);
    expect(refused.json.error).toMatchObject({ code: 'CHECKPOINT_DROPPED' });
    expect((await rollback(id, after.callId)).status).toBe(200);
    // Three of 250 such paths each (within a call's share) weigh more than an index holds together:
    // the oldest goes, as past the byte bound.
    const kept = [await upload('a', 250), await upload('b', 250), await upload('c', 250)];
    const left = (await checkpoints(id)).map((c) => c.callId);
    expect(left).not.toContain(kept[0]?.callId);
    expect(left).toContain(kept[2]?.callId);
    expect(statSync(join(dir, id, 'index.json')).size).toBeLessThanOrEqual(INDEX_MAX_WEIGHT);
  });

  it("another tenant's agent is unknown; hostile bodies are refused", async () => {
    const { id } = await api.createAgent(api.keyA);
    const w = await call(id, 'write', { file_path: 'a.txt', content: 'x' });
    const other = await rollback(id, w.callId, api.keyB);
    expect(other.status).toBe(404);
    expect(other.json.error.code).toBe('NOT_FOUND');
    expect((await api.request(api.keyB, 'GET', `/v1/agents/${id}/checkpoints`)).status).toBe(404);
    for (const body of [
      {},
      { callId: '' },
      { callId: 7 },
      { callId: 'x', more: 1 },
      { callId: 'x', seq: 1 },
      { seq: 0 },
      { seq: 1.5 },
      { seq: '1' },
    ]) {
      expect((await api.request(api.keyA, 'POST', `/v1/agents/${id}/rollback`, body)).status).toBe(400);
    }
    expect((await rollback(id, '../../etc/passwd')).json.error.code).toBe('CHECKPOINT_NOT_FOUND');
    expect((await files(id))['/workspace/a.txt']).toBe(Buffer.from('x').toString('base64'));
  });
});

describe("the operator's maximum of checkpoint bytes (DSH_CHECKPOINT_MAX_BYTES)", () => {
  it("caps a tenant's bytes whatever it asks, and 0 tracks nothing", () => {
    const asked = { maxBytes: 1024 ** 3, maxCount: 500, tools: true };
    expect(withinOperator(asked, 256 * 1024 ** 2)).toEqual({ ...asked, maxBytes: 256 * 1024 ** 2 });
    expect(withinOperator({ ...asked, maxBytes: 1024 }, 256 * 1024 ** 2)).toEqual({
      ...asked,
      maxBytes: 1024,
    });
    expect(withinOperator(asked, 0)).toMatchObject({ maxCount: 0 });
  });
});
