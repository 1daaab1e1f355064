// Rollback against a hostile program in the agent's own sandbox (issue 36's checkpoints): a path
// the checkpoints track is made a symlink leading out of the workspace (the file itself, or a
// directory above it), once before the rollback and, in a race, over and over while rollbacks run
// (a swap between the check and the write). Guarantee: a rollback never writes outside the
// workspace, never reads a file from outside into it, and either restores or refuses
// (ROLLBACK_UNSAFE, CHECKPOINT_DROPPED) with a stable code. A tracked FIFO, device link or
// directory is never read into a checkpoint (nothing hangs). Hostile targets (seq, callId) and
// another tenant's agent are refused before anything is read.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Harness, type Loose, startHarness, text } from './harness.ts';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(() => h?.close());

const rollback = (key: string, id: string, target: unknown) =>
  h.http(key, 'POST', `/v1/agents/${id}/rollback`, target);

const checkpoints = async (id: string): Promise<Loose[]> =>
  (await h.http(h.keyA, 'GET', `/v1/agents/${id}/checkpoints`)).json.checkpoints;

/** stdout of a bash call of tenant A's agent (the call must succeed). */
const sh = async (id: string, command: string): Promise<string> => {
  const r = await h.bash(h.keyA, id, command);
  expect(r.ok, text(r)).toBe(true);
  return String(r.value.stdout);
};

it('a tracked file or its directory made a link out of the workspace: the rollback refuses and writes nothing there', async () => {
  const id = await h.agent(h.keyA);
  const [first, , dirFirst] = await h.calls(h.keyA, id, [
    ['w1', 'write', { file_path: 'a.txt', content: 'PRE' }],
    ['w2', 'write', { file_path: 'a.txt', content: 'POST' }],
    ['d1', 'write', { file_path: 'd/a.txt', content: 'PRE' }],
    ['d2', 'write', { file_path: 'd/a.txt', content: 'POST' }],
  ]);
  expect(first.ok && dirFirst.ok).toBe(true);
  // What the last tracked calls left, now behind links to files outside holding the same bytes.
  await sh(
    id,
    'mkdir -p /tmp/od && printf POST > /tmp/out.txt && printf POST > /tmp/od/a.txt && ' +
      'ln -sfn /tmp/out.txt a.txt && rm -r d && ln -sfn /tmp/od d',
  );
  for (const callId of ['w2', 'd2']) {
    const refused = await rollback(h.keyA, id, { callId });
    expect(refused.status, refused.text).toBe(409);
    expect(refused.json.error.code).toBe('ROLLBACK_UNSAFE');
  }
  expect(await sh(id, 'cat /tmp/out.txt; echo; cat /tmp/od/a.txt')).toBe('POST\nPOST');
  // A write tool through those links is refused too, so no checkpoint reads a file outside.
  const [through] = await h.calls(h.keyA, id, [['w3', 'write', { file_path: 'a.txt', content: 'X' }]]);
  expect(through.ok).toBe(false);
  expect(await sh(id, 'cat /tmp/out.txt')).toBe('POST');
});

it('links swapped in and out while rollbacks run never lead a write outside the workspace', async () => {
  const id = await h.agent(h.keyA);
  await sh(id, 'mkdir -p d /tmp/od && printf OUT > /tmp/out.txt && printf OUT > /tmp/od/a.txt');
  // Swaps a.txt between a file and a link outside, and d between a directory and a link outside.
  const swapper = await h.calls(h.keyA, id, [
    [
      'swap',
      'bash',
      {
        command:
          'while :; do printf REG > .r; mv -f .r a.txt; ln -sfn /tmp/out.txt .l; mv -Tf .l a.txt; ' +
          'mkdir -p .dd; printf REG > .dd/a.txt; rm -rf d.old; mv -T d d.old 2>/dev/null; mv -T .dd d; ' +
          'ln -sfn /tmp/od .dl; rm -rf d.old; mv -T d d.old; mv -Tf .dl d; done',
        description: 'swap links',
        run_in_background: true,
      },
    ],
  ]);
  expect(swapper[0]?.ok, text(swapper[0])).toBe(true);
  const outcomes = new Map<string, number>();
  for (let round = 0; round < 15; round++) {
    await h.calls(h.keyA, id, [
      [`a${round}`, 'write', { file_path: 'a.txt', content: 'NEW' }],
      [`b${round}`, 'write', { file_path: 'd/a.txt', content: 'NEW' }],
    ]);
    // Each call on its own (d/a.txt's, then a.txt's), newest first.
    const list = await checkpoints(id);
    for (const callId of [`b${round}`, `a${round}`]) {
      const target = list.find((c) => c.callId === callId);
      if (target === undefined) continue;
      const res = await rollback(h.keyA, id, { seq: target.seq });
      const outcome = res.status === 200 ? '200' : `${res.status} ${res.json?.error?.code}`;
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
    }
  }
  const [kill] = await h.calls(h.keyA, id, [['stop', 'job_kill', { job_id: swapper[0]?.value.jobId }]]);
  expect(kill?.ok, text(kill)).toBe(true);
  // Only answers a client can act on; nothing outside the workspace was written.
  for (const outcome of outcomes.keys())
    expect(['200', '409 ROLLBACK_UNSAFE', '409 CHECKPOINT_DROPPED']).toContain(outcome);
  expect(await sh(id, 'cat /tmp/out.txt; echo; cat /tmp/od/a.txt')).toBe('OUT\nOUT');
});

it('a tracked path that is a FIFO, a device link or a directory is not read into a checkpoint, and nothing hangs', async () => {
  const id = await h.agent(h.keyA);
  await sh(id, 'mkfifo pipe && ln -s /dev/zero zero && mkdir dir');
  const results = await h.calls(h.keyA, id, [
    ['p', 'write', { file_path: 'pipe', content: 'x' }],
    ['z', 'write', { file_path: 'zero', content: 'x' }],
    ['d', 'write', { file_path: 'dir', content: 'x' }],
  ]);
  // The FIFO is replaced by the file (never opened for its pre-image: that read would block); the
  // link out and the directory are refused.
  expect(results.map((r) => (r.ok ? 'ok' : r.error?.code))).toEqual([
    'ok',
    'PATH_OUTSIDE_WORKSPACE',
    'NOT_A_FILE',
  ]);
  expect(await sh(id, 'cat pipe; test -d dir && echo " dir"')).toBe('x dir\n');
  // What the FIFO was is not kept: a rollback to that write is refused, not made of a read of it.
  const back = await rollback(h.keyA, id, { callId: 'p' });
  expect(back.status, back.text).toBe(409);
  expect(back.json.error.code).toBe('CHECKPOINT_DROPPED');
});

it('hostile rollback targets and another tenant are refused before anything is read', async () => {
  const id = await h.agent(h.keyA);
  await h.calls(h.keyA, id, [['w', 'write', { file_path: 'keep.txt', content: 'kept' }]]);
  const invalid: unknown[] = [
    {},
    { seq: 0 },
    { seq: -1 },
    { seq: 1.5 },
    { seq: '1' },
    { seq: null },
    { callId: '' },
    { callId: 'x'.repeat(501) },
    { callId: 7 },
    { callId: 'w', seq: 1 },
    { callId: 'w', path: '/etc/passwd' },
    [{ callId: 'w' }],
    'w',
  ];
  for (const body of invalid) {
    const res = await rollback(h.keyA, id, body);
    expect(res.status, JSON.stringify(body)).toBe(400);
  }
  for (const body of [
    { seq: 2 ** 53 - 1 },
    { seq: 1e300 },
    { callId: '../../../etc/passwd' },
    { callId: '__proto__' },
    { callId: 'constructor' },
    { callId: 'hasOwnProperty' },
  ]) {
    const res = await rollback(h.keyA, id, body);
    expect(res.status, JSON.stringify(body)).toBe(404);
    expect(res.json.error.code).toBe('CHECKPOINT_NOT_FOUND');
  }
  // Tenant B holding A's agent id and call id: the answer of an agent that does not exist.
  const ghost = `agt_${'x'.repeat(21)}`;
  const theirs = await rollback(h.keyB, id, { callId: 'w' });
  const nobody = await rollback(h.keyB, ghost, { callId: 'w' });
  expect(theirs.status).toBe(404);
  expect(theirs.text.replaceAll(id, '<ID>')).toBe(nobody.text.replaceAll(ghost, '<ID>'));
  expect((await h.http(h.keyB, 'GET', `/v1/agents/${id}/checkpoints`)).status).toBe(404);
  expect(await sh(id, 'cat keep.txt')).toBe('kept');
  expect(await checkpoints(id)).toHaveLength(1);
});
