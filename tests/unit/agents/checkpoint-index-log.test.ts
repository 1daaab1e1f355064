// The checkpoint store's index as a whole file plus a log of changes (host/agents/checkpoints/index-log.ts):
// what a store reads back, in this process or a new one, is the index written last, through any mix
// of entries made, completed, replaced and dropped; a torn last line or a crash between a whole write
// and the log's emptying loses nothing that was written whole; the log stays bounded.
import { appendFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LOG_MAX_LINES } from '../../../host/agents/checkpoints/index-log.ts';
import { type CheckpointStore, createCheckpointStore } from '../../../host/agents/checkpoints/store.ts';
import type { Checkpoint, CheckpointIndex } from '../../../host/agents/checkpoints/types.ts';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'ckpt-log-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const AGENT = 'agent-1';
const logOf = () => readFileSync(join(dir, AGENT, 'index.log'), 'utf8');

/** A checkpoint as the index queue holds one: frozen, so a change is a new object. */
const entry = (seq: number, state = 'open'): Checkpoint =>
  Object.freeze({
    seq,
    callId: `call-${seq}`,
    tool: state === 'open' ? 'write' : 'edit',
    at: 1_700_000_000_000 + seq,
    bytes: seq * 10,
    files: [],
  } as unknown as Checkpoint);

/** The next index: the queue's copy (its own arrays over the same entries), changed by `change`. */
const next = (index: CheckpointIndex, change: (i: CheckpointIndex) => void): CheckpointIndex => {
  const copy = { ...index, entries: [...index.entries], dropped: [...index.dropped] };
  change(copy);
  return copy;
};

const plain = (index: CheckpointIndex) => JSON.parse(JSON.stringify(index));

describe('checkpoint index log', () => {
  it('a tracked call changes the index by a line, and a new store reads the index written last', async () => {
    const store = createCheckpointStore(dir);
    let index: CheckpointIndex = { seq: 0, entries: [], dropped: [], tenantId: 'tenant-a' };
    for (let seq = 1; seq <= 40; seq++) {
      index = next(index, (i) => {
        i.seq = seq;
        i.entries.push(entry(seq));
      });
      await store.write(AGENT, index);
      // Completed: the entry replaced by a new object (as the queue does), never edited in place.
      index = next(index, (i) => {
        i.entries[i.entries.length - 1] = entry(seq, 'done');
      });
      await store.write(AGENT, index);
    }
    const whole = statSync(join(dir, AGENT, 'index.json')).size;
    // The first write was whole (a new agent); the other 79 are lines of a few hundred bytes.
    expect(logOf().split('\n').filter(Boolean)).toHaveLength(79);
    expect(whole).toBeLessThan(400);
    expect(plain(await createCheckpointStore(dir).read(AGENT))).toEqual(plain(index));
  });

  it('matches a model through random changes, restarts and bounds (entries and dropped ids)', async () => {
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    let store: CheckpointStore = createCheckpointStore(dir);
    let index: CheckpointIndex = { seq: 0, entries: [], dropped: [] };
    let seq = 0;
    for (let step = 0; step < 1500; step++) {
      const op = random(10);
      index = next(index, (i) => {
        if (op < 4) i.entries.push(entry(++seq));
        else if (op < 6 && i.entries.length > 0) i.entries[random(i.entries.length)] = entry(++seq, 'done');
        else if (op < 8) {
          const k = random(Math.min(4, i.entries.length) + 1);
          for (const gone of i.entries.splice(0, k)) i.dropped.push(gone.callId);
          if (i.dropped.length > 30) i.dropped.splice(0, i.dropped.length - 30);
          i.droppedThrough = seq;
        } else if (op === 8 && i.entries.length > 2) i.entries.splice(1, 1); // from the middle: written whole
        i.seq = seq;
      });
      await store.write(AGENT, index);
      if (random(25) === 0) {
        store = createCheckpointStore(dir); // a restart: the next write bases itself on what it reads
        expect(plain(await store.read(AGENT))).toEqual(plain(index));
      }
    }
    expect(plain(await createCheckpointStore(dir).read(AGENT))).toEqual(plain(index));
    expect(logOf().split('\n').filter(Boolean).length).toBeLessThanOrEqual(LOG_MAX_LINES);
  });

  it('a torn last line is not applied, and the next write is whole', async () => {
    const store = createCheckpointStore(dir);
    const first: CheckpointIndex = { seq: 1, entries: [entry(1)], dropped: [] };
    await store.write(AGENT, first);
    const second = next(first, (i) => {
      i.seq = 2;
      i.entries.push(entry(2));
    });
    await store.write(AGENT, second);
    appendFileSync(join(dir, AGENT, 'index.log'), '{"g":1,"r":{"seq":3},"k":0,"s":[],"a":[{"seq"');
    const reader = createCheckpointStore(dir);
    const read = await reader.read(AGENT);
    expect(plain(read)).toEqual(plain(second));
    const third = next(read, (i) => {
      i.seq = 3;
      i.entries.push(entry(3));
    });
    await reader.write(AGENT, third);
    expect(logOf()).toBe('');
    expect(plain(await createCheckpointStore(dir).read(AGENT))).toEqual(plain(third));
  });

  it('a log left by a crash after a whole write (its lines of the old generation) is skipped', async () => {
    const store = createCheckpointStore(dir);
    const first: CheckpointIndex = { seq: 1, entries: [entry(1)], dropped: [] };
    await store.write(AGENT, first);
    const second = next(first, (i) => {
      i.seq = 3;
      i.entries.push(entry(2), entry(3));
    });
    await store.write(AGENT, second);
    const stale = logOf();
    expect(stale).not.toBe('');
    // A whole write (an entry gone from the middle), then the old log put back as a crash would leave it.
    const whole = next(second, (i) => {
      i.entries.splice(1, 1);
    });
    await store.write(AGENT, whole);
    expect(logOf()).toBe('');
    writeFileSync(join(dir, AGENT, 'index.log'), stale);
    expect(plain(await createCheckpointStore(dir).read(AGENT))).toEqual(plain(whole));
  });
});
