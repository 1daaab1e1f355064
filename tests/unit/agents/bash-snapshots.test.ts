// Snapshot checkpoints of bash calls in the tracker and rollback (issue 36), over fake snapshots:
// they count in the bounds by their disk bytes, the oldest dropped with its snapshot deleted; one
// larger than the byte bound is deleted and not kept; a rollback across one restores the workspace
// from the oldest it undoes, then writes the pre-images of tracked calls before it, and deletes
// every snapshot it undid; forgetting the agent deletes the rest; the setting off takes none.
// Through the API over the memory provider (no snapshots): the setting is refused, 501.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HeldSnapshot } from '../../../host/agents/checkpoints/index-queue.ts';
import { rollback } from '../../../host/agents/checkpoints/rollback.ts';
import { createCheckpointStore } from '../../../host/agents/checkpoints/store.ts';
import { type CheckpointTracker, createCheckpointTracker } from '../../../host/agents/checkpoints/tracker.ts';
import type { CheckpointBounds } from '../../../host/agents/checkpoints/types.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import { makeApi } from '../api/harness.ts';

describe('snapshot checkpoints (tracker)', () => {
  let dir: string;
  let tracker: CheckpointTracker;
  let sandbox: Sandbox;
  const dropped: string[] = [];
  const bounds: CheckpointBounds = { maxBytes: 1000, maxCount: 3, snapshotBash: true };
  let n = 0;
  const take = (bytes: number) => async () => ({
    snapshot: { id: `ckpt_${++n}`, node: 'local', sizeBytes: 4096 } as HeldSnapshot,
    bytes,
  });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-bashsnap-'));
    dropped.length = 0;
    Object.assign(bounds, { maxBytes: 1000, maxCount: 3, snapshotBash: true });
    tracker = createCheckpointTracker({
      store: createCheckpointStore(dir),
      boundsOf: async () => ({ ...bounds }),
      dropSnapshot: async (s) => {
        dropped.push(s.id);
      },
    });
    sandbox = await createMemoryProvider().create({ tenantId: 't', agentId: 'a' });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('counts snapshots by their bytes; the oldest go with their snapshot; one past the byte bound is not kept', async () => {
    for (const id of ['b1', 'b2', 'b3', 'b4'])
      await tracker.snapshot('t', 'a', { callId: id, tool: 'bash' }, take(100));
    expect((await tracker.list('a')).map((c) => [c.callId, c.kind, c.bytes])).toEqual([
      ['b2', 'snapshot', 100],
      ['b3', 'snapshot', 100],
      ['b4', 'snapshot', 100],
    ]);
    expect(dropped).toHaveLength(1);
    await tracker.snapshot('t', 'a', { callId: 'b5', tool: 'bash' }, take(850));
    expect((await tracker.list('a')).map((c) => c.callId)).toEqual(['b4', 'b5']); // 100 + 850 within 1000
    await tracker.snapshot('t', 'a', { callId: 'big', tool: 'bash' }, take(1001));
    expect((await tracker.list('a')).map((c) => c.callId)).toEqual(['b4', 'b5']);
    expect(dropped).toHaveLength(4);
    await tracker.forget('a');
    expect(dropped).toHaveLength(6);
    bounds.snapshotBash = false;
    let taken = false;
    await tracker.snapshot('t', 'a', { callId: 'off', tool: 'bash' }, async () => {
      taken = true;
      return take(1)();
    });
    expect(taken).toBe(false);
    expect(await tracker.list('a')).toEqual([]);
  });

  it('a rollback across one restores from the oldest undone snapshot, then the earlier tracked files', async () => {
    await sandbox.fs.writeFile('a.txt', 'before');
    await tracker.track('t', 'a', sandbox, { callId: 'w', tool: 'write', paths: ['a.txt'] }, () =>
      sandbox.fs.writeFile('a.txt', 'written'),
    );
    await tracker.snapshot('t', 'a', { callId: 'b1', tool: 'bash' }, take(10));
    await tracker.snapshot('t', 'a', { callId: 'b2', tool: 'bash' }, take(10));
    const [, first] = (await tracker.list('a')).map((c) => c.callId);
    expect(first).toBe('b1');
    const restoredFrom: string[] = [];
    const view = await rollback(
      tracker,
      'a',
      async () => sandbox,
      { callId: 'w' },
      async (held) => {
        restoredFrom.push(held.id);
        await sandbox.fs.writeFile('a.txt', 'as the snapshot had it'); // bash's change, not what w left
        return sandbox;
      },
    );
    expect(restoredFrom).toEqual([`ckpt_${n - 1}`]);
    expect((await sandbox.fs.readFile('a.txt')).toString()).toBe('before');
    expect(view).toMatchObject({ callId: 'w', undone: ['b2', 'b1', 'w'], restored: ['/workspace/a.txt'] });
    expect(view.workspace).toEqual({ fromCall: 'b1', lost: ['processes', '/tmp', 'terminals', 'jobs'] });
    expect(dropped.sort()).toEqual([`ckpt_${n - 1}`, `ckpt_${n}`].sort());
    expect(await tracker.list('a')).toEqual([]);
  });
});

describe('snapshotBash where workspaces cannot be snapshotted', () => {
  it('PUT /v1/settings refuses it with 501 SNAPSHOT_UNSUPPORTED and keeps the settings', async () => {
    const api = await makeApi();
    try {
      const put = await api.request(api.keyA, 'PUT', '/v1/settings', { checkpoints: { snapshotBash: true } });
      expect(put.status).toBe(501);
      expect(put.json.error.code).toBe('SNAPSHOT_UNSUPPORTED');
      const got = await api.request(api.keyA, 'GET', '/v1/settings');
      expect(got.json.checkpoints.snapshotBash).toBe(false);
      const off = await api.request(api.keyA, 'PUT', '/v1/settings', {
        checkpoints: { snapshotBash: false },
      });
      expect(off.status).toBe(200);
    } finally {
      await api.close();
    }
  });
});
