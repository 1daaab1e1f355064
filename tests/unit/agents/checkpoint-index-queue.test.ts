// The checkpoint index queue (host/agents/checkpoints/index-queue.ts): a turn works on a copy, so a
// turn that throws halfway leaves the agent's index as it was, in memory and on disk; a turn that
// tries to edit an entry in place is refused (entries are frozen) instead of changing the index
// other turns see; a changed entry is replaced. The tracker writes a pre-image's blob once while an
// entry names it, and its store makes the agent's folder again when it was removed behind its back.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createIndexQueue } from '../../../host/agents/checkpoints/index-queue.ts';
import {
  type CheckpointStore,
  createCheckpointStore,
  indexJson,
} from '../../../host/agents/checkpoints/store.ts';
import { createCheckpointTracker } from '../../../host/agents/checkpoints/tracker.ts';
import type { Checkpoint } from '../../../host/agents/checkpoints/types.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';

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

describe('checkpoint tracker and store', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'dsh-ckpt-blobs-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a pre-image once while an entry names it, and again once none does', async () => {
    const store = createCheckpointStore(dir);
    let puts = 0;
    const counted: CheckpointStore = {
      ...store,
      putBlob: (agentId, bytes) => {
        puts++;
        return store.putBlob(agentId, bytes);
      },
    };
    const bounds = { maxBytes: 1 << 20, maxCount: 1 };
    const tracker = createCheckpointTracker({ store: counted, boundsOf: async () => bounds });
    const sandbox = await createMemoryProvider().create({ tenantId: 't', agentId: 'a1' });
    await sandbox.fs.writeFile('a.txt', Buffer.from('same'));
    const write = (callId: string, content: string) =>
      tracker.track('t', 'a1', sandbox, { callId, tool: 'write', paths: ['a.txt'] }, () =>
        sandbox.fs.writeFile('a.txt', Buffer.from(content)),
      );
    await write('c1', 'same'); // keeps "same"
    await write('c2', 'same'); // "same", named by c1: not written again (c1 dropped after)
    await write('c3', 'other'); // "same", named by c2
    expect(puts).toBe(1);
    await write('c4', 'other'); // keeps "other"; c3 dropped, and "same" with it
    await write('c5', 'same'); // "other", named by c4
    expect(puts).toBe(2);
    await write('c6', 'same'); // "same" again, named by none since c3 went: written again
    expect(puts).toBe(3);
    const shas = readdirSync(join(dir, 'a1', 'blobs'));
    const named = new Set(
      (await store.read('a1')).entries.flatMap((e) =>
        e.files.flatMap((f) => (f.before.kind === 'file' ? [f.before.sha256] : [])),
      ),
    );
    expect(new Set(shas)).toEqual(named);
  });

  it("makes the agent's folder again when it was removed behind the store's back", async () => {
    const store = createCheckpointStore(dir);
    await store.write('a1', { seq: 1, entries: [entry(1)], dropped: [] });
    await store.putBlob('a1', Buffer.from('x'));
    rmSync(join(dir, 'a1'), { recursive: true, force: true });
    await store.write('a1', { seq: 2, entries: [entry(2)], dropped: [] });
    const sha = await store.putBlob('a1', Buffer.from('y'));
    expect((await store.read('a1')).seq).toBe(2);
    expect((await store.getBlob('a1', sha)).toString()).toBe('y');
  });

  it('writes the JSON of an index whole, frozen entries reused and changed ones made again', () => {
    const held = Object.freeze({ ...entry(1), files: Object.freeze([...entry(1).files]) }) as Checkpoint;
    const index = {
      seq: 2,
      entries: [held, entry(2)],
      dropped: ['c0', 'a "quoted" \\ id'],
      droppedThrough: 0,
    };
    expect(JSON.parse(indexJson(index))).toEqual(JSON.parse(JSON.stringify(index)));
    // The same frozen entry in a later index, beside a replaced one: the same JSON as a whole stringify.
    const later = {
      ...index,
      entries: [held, { ...entry(2), files: [{ ...entry(2).files[0], after: 'absent' }] }],
    };
    expect(JSON.parse(indexJson(later as never))).toEqual(JSON.parse(JSON.stringify(later)));
    expect(JSON.parse(indexJson({ seq: 0, entries: [], dropped: [] }))).toEqual({
      seq: 0,
      entries: [],
      dropped: [],
    });
  });
});
