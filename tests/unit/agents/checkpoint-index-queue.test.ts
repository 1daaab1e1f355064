// The checkpoint index queue (host/agents/checkpoints/index-queue.ts): a turn works on a copy, so a
// turn that throws halfway leaves the agent's index as it was, in memory and on disk; a turn that
// tries to edit an entry in place is refused (entries are frozen) instead of changing the index
// other turns see; a changed entry is replaced.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createIndexQueue } from '../../../host/agents/checkpoints/index-queue.ts';
import { createCheckpointStore } from '../../../host/agents/checkpoints/store.ts';
import type { Checkpoint } from '../../../host/agents/checkpoints/types.ts';

const entry = (seq: number): Checkpoint => ({
  callId: `c${seq}`,
  tool: 'write',
  seq,
  at: seq,
  files: [{ path: '/workspace/a.txt', before: { kind: 'absent' } }],
  bytes: 0,
});

describe('checkpoint index queue', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-ckpt-queue-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('keeps the index as it was when a turn throws after changing its copy', async () => {
    const store = createCheckpointStore(dir);
    const queue = createIndexQueue(store);
    await queue.turn('a1', async (index) => {
      index.entries.push(entry(++index.seq));
      return { index, value: undefined };
    });
    const failing = queue.turn('a1', async (index) => {
      index.seq = 99;
      index.entries.push(entry(2));
      index.entries.shift();
      index.dropped.push('c1');
      throw new Error('halfway');
    });
    await expect(failing).rejects.toThrow('halfway');
    const seen = await queue.turn('a1', async (index) => ({ value: structuredClone(index) }));
    expect(seen).toEqual({ seq: 1, entries: [entry(1)], dropped: [] });
    expect(await store.read('a1')).toEqual({ seq: 1, entries: [entry(1)], dropped: [] });
  });

  it('refuses an in-place edit of a held entry; a replaced entry is written', async () => {
    const store = createCheckpointStore(dir);
    const queue = createIndexQueue(store);
    await queue.turn('a1', async (index) => {
      index.entries.push(entry(++index.seq));
      return { index, value: undefined };
    });
    const editing = queue.turn('a1', async (index) => {
      const file = index.entries[0]?.files[0] as { after?: string };
      file.after = 'absent';
      return { index, value: undefined };
    });
    await expect(editing).rejects.toThrow(TypeError);
    await queue.turn('a1', async (index) => {
      const first = index.entries[0] as Checkpoint;
      index.entries[0] = { ...first, files: first.files.map((f) => ({ ...f, after: 'absent' })) };
      return { index, value: undefined };
    });
    const stored = await store.read('a1');
    expect(stored.entries[0]?.files[0]?.after).toBe('absent');
    // A fresh queue (the service restarted) reads the same from disk and holds it frozen too.
    const again = createIndexQueue(store);
    const edit = again.turn('a1', async (index) => {
      (index.entries[0] as { tool: string }).tool = 'edit';
      return { index, value: undefined };
    });
    await expect(edit).rejects.toThrow(TypeError);
  });
});
