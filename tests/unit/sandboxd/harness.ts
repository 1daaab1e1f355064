// Test harness: runs sandboxd as a local child process (Node 24 strips its types) over its stdin and
// stdout, with a fresh temp directory as the workspace root and another as its state directory.
// `stop()` closes stdin (sandboxd then kills its jobs and exits) and removes the temp directories.

import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import {
  type ConnectSandboxdOptions,
  connectSandboxd,
  type SandboxdClient,
} from '../../../host/sandbox/sandboxd/client.ts';

const MAIN = join(import.meta.dirname, '..', '..', '..', 'sandbox-image', 'sandboxd', 'main.ts');

export interface LocalSandboxd {
  /** Workspace root (real path, so that it equals what sandboxd reports). */
  root: string;
  /** A directory next to the root, outside it. */
  outside: string;
  child: ChildProcessWithoutNullStreams;
  stderr: () => string;
  connect(options?: Partial<ConnectSandboxdOptions>): Promise<SandboxdClient>;
  stop(): Promise<void>;
}

export const startLocalSandboxd = async (env: Record<string, string> = {}): Promise<LocalSandboxd> => {
  const base = realpathSync(mkdtempSync(join(tmpdir(), 'sandboxd-test-')));
  const root = join(base, 'ws');
  const outside = join(base, 'outside');
  await mkdir(root);
  await mkdir(outside);
  const child = spawn(process.execPath, ['--no-warnings', MAIN], {
    env: {
      ...process.env,
      ...env,
      SANDBOXD_ROOT: root,
      SANDBOXD_STATE: join(base, 'state'),
      SANDBOXD_EXIT_ON_EOF: '1',
    },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (b: Buffer) => {
    err += b.toString();
  });
  return {
    root,
    outside,
    child,
    stderr: () => err,
    connect: (options = {}) =>
      connectSandboxd({ input: child.stdout, output: child.stdin, root, timeoutMs: 15_000, ...options }),
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.stdin.end();
        const t = setTimeout(() => child.kill('SIGKILL'), 3000);
        await exited;
        clearTimeout(t);
      }
      rmSync(base, { recursive: true, force: true });
    },
  };
};

/** A pid is gone when /proc has no entry for it or only a zombie awaiting its reaper. */
export const gone = (pid: number): boolean => {
  const path = `/proc/${pid}/stat`;
  if (!existsSync(path)) return true;
  try {
    return readFileSync(path, 'utf8').split(') ')[1]?.startsWith('Z') ?? true;
  } catch {
    return true;
  }
};

/** A local sandboxd and a connected client for the tests of the calling file (or describe block). */
/** `c` may be replaced by a test that reconnects (`local.c = await local.sd.connect()`); the last one is closed. */
export const useLocalSandboxd = (): { readonly sd: LocalSandboxd; c: SandboxdClient } => {
  const local = {} as { sd: LocalSandboxd; c: SandboxdClient };
  beforeAll(async () => {
    local.sd = await startLocalSandboxd();
    local.c = await local.sd.connect();
  });
  afterAll(async () => {
    local.c?.close();
    await local.sd?.stop();
  });
  return local;
};
