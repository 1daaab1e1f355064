// runExec's end: once the command has exited, what it wrote is still read in full however slow the
// host or the event loop is, and a pipe held open by a process that left the group is still let go.
// Through the spawner (python3), as in the image: Node's own child_process resumes paused pipes when
// the child exits, which hides what a slow host does to the spawner's pipes.

import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ExecIo, runExec } from '../../../sandbox-image/sandboxd/exec.ts';
import { createSpawner, type Spawner } from '../../../sandbox-image/sandboxd/spawner.ts';
import { openWorkspace, type Workspace } from '../../../sandbox-image/sandboxd/workspace.ts';

let root: string;
let ws: Workspace;
let spawner: Spawner;

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'exec-drain-')));
  ws = await openWorkspace(root);
  spawner = createSpawner({ log: () => {} });
  spawner.start();
  for (let i = 0; i < 300 && spawner.state !== 'ready'; i++) await new Promise((r) => setTimeout(r, 20));
  expect(spawner.state).toBe('ready');
});
afterAll(() => {
  spawner?.stop();
  rmSync(root, { recursive: true, force: true });
});

const busy = (ms: number): void => {
  const end = Date.now() + ms;
  while (Date.now() < end);
};

const exec = (command: string, io: ExecIo) =>
  runExec(ws, { command }, io, new AbortController().signal, spawner);

describe('exec output after the command exits', () => {
  it('is read in full when the loop stalls longer than the close grace between chunks', async () => {
    let got = 0;
    const r = await exec('head -c 300000 /dev/zero | tr "\\0" x', {
      send: (_s, data) => {
        got += data.length;
        busy(300);
        return true;
      },
      onDrain: () => {},
    });
    expect(r.exitCode).toBe(0);
    expect(got).toBe(300_000);
  });

  it('is read in full when a slow host drains just as the grace runs out and the loop then stalls', async () => {
    let got = 0;
    let first = true;
    // The first chunk pauses the pipes; the rest fits in the pipe, so the command exits meanwhile.
    const r = await exec('head -c 120000 /dev/zero | tr "\\0" x', {
      send: (_s, data) => {
        got += data.length;
        const ok = !first;
        first = false;
        return ok;
      },
      onDrain: (fn) => {
        // As a socket's 'drain' does, after the loop polled for input: the pipes' data is only read
        // at the next poll, and the timers come first.
        setTimeout(() => {
          setImmediate(() => {
            fn();
            busy(250); // every grace timer has run out when the loop next looks at timers
          });
        }, 300);
      },
    });
    expect(r.exitCode).toBe(0);
    expect(got).toBe(120_000);
  });

  // Had it waited for the escaped writer, the call would not end before the test's own timeout.
  it('still ends when a process that left the group holds the pipe open and keeps writing', async () => {
    let got = 0;
    const r = await exec('setsid yes >&1 & sleep 0.2; echo parent', {
      send: (_s, data) => {
        got += data.length;
        return true;
      },
      onDrain: () => {},
    });
    expect(r.exitCode).toBe(0);
    expect(got).toBe(1024 * 1024); // maxOutputBytes; the rest was drained and dropped
    expect(r.truncated).toBe(true);
  });
});
