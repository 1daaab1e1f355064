// What survives a crash of the process writing the durable log (README, "Durable log"): every
// event a subscriber heard of or a flush() covered, with its index entry, gap-free, and the log
// continues after them; what was only queued or in flight is lost whole, never half-written.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { openStore } from '../../../host/store/index.ts';
import { until } from '../../helpers/until.ts';

const WRITER = new URL('../../fixtures/store/log-writer.ts', import.meta.url).pathname;
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

it('keeps every event reported durable when the process is killed mid-batch', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-crash-'));
  dirs.push(dir);
  const child = spawn(process.execPath, ['--no-node-snapshot', WRITER, dir], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let durable = 0;
  let flushed = 0;
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => {
    text += chunk.toString();
    const lines = text.split('\n');
    text = lines.pop() ?? '';
    for (const line of lines) {
      const [what, seq] = line.split(' ');
      if (what === 'durable') durable = Math.max(durable, Number(seq));
      if (what === 'flushed') flushed = Math.max(flushed, Number(seq));
    }
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  // Two flushes behind it and writes still going: kill it in the middle of a batch.
  await until(() => flushed > 0 && durable > flushed + 2000, {
    what: 'events written past a flush',
    timeoutMs: 60_000,
  });
  child.kill('SIGKILL');
  await exited;
  const reported = Math.max(durable, flushed);

  const store = openStore({ dataDir: dir, eventWriter: 'inline' });
  try {
    const seqs: number[] = [];
    for (let after = 0; ; ) {
      const page = await store.events.list('s', { afterSeq: after, limit: 5000, payloads: 'refs' });
      if (page.length === 0) break;
      for (const event of page) seqs.push(event.seq);
      after = page.at(-1)?.seq ?? after;
    }
    // Everything reported durable is there, gap-free from 1; each row whole and indexed with it.
    expect(seqs.length).toBeGreaterThanOrEqual(reported);
    expect(seqs.every((seq, i) => seq === i + 1)).toBe(true);
    const indexed = store.db
      .prepare('SELECT count(*) AS n FROM event_index WHERE session_id = ?')
      .get('s') as { n: number };
    expect(indexed.n).toBe(seqs.length);
    // The log carries on after what survived.
    const [next] = await store.events.append([
      { sessionId: 's', type: 'after.crash', surface: 'log-only', data: {} },
    ]);
    await store.events.flush();
    expect(next?.seq).toBe(seqs.length + 1);
  } finally {
    store.close();
  }
});
