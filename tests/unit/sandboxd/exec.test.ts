import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxdClient } from '../../../host/sandbox/sandboxd/client.ts';
import { until } from '../../helpers/until.ts';
import { gone, type LocalSandboxd, startLocalSandboxd } from './harness.ts';

const pidsIn = (file: string): number[] => readFileSync(file, 'utf8').trim().split(/\s+/).map(Number);

let sd: LocalSandboxd;
let c: SandboxdClient;
beforeAll(async () => {
  sd = await startLocalSandboxd();
  c = await sd.connect({ maxOutputBytes: 64 * 1024 });
});
afterAll(async () => {
  c?.close();
  await sd?.stop();
});

describe('sandboxd exec', () => {
  it('returns stdout, stderr and the exit code; runs in the root with the given env and stdin', async () => {
    const r = await c.exec('pwd; echo "$GREETING"; cat; echo oops >&2; exit 7', {
      env: { GREETING: 'hi there' },
      stdin: 'from stdin\n',
    });
    expect(r).toMatchObject({
      exitCode: 7,
      stdout: `${sd.root}\nhi there\nfrom stdin\n`,
      stderr: 'oops\n',
      timedOut: false,
      truncated: false,
    });
    expect(await c.exec('pwd', { cwd: 'sub' }).catch((e) => e.code)).toBe('FILE_NOT_FOUND');
    await c.fs.mkdir('sub');
    expect((await c.exec('pwd', { cwd: 'sub' })).stdout).toBe(`${sd.root}/sub\n`);
    expect((await c.exec('echo $SANDBOXD_ROOT')).stdout).toBe('\n'); // sandboxd's own settings stay private
  });

  it('streams output as it is produced, before the command ends', async () => {
    // The command goes on only once the test has seen its first line (or gives up after 5 s).
    const seen: string[] = [];
    await c.exec(
      'echo first; for i in $(seq 50); do [ -e go ] && break; sleep 0.1; done; [ -e go ] && echo second || echo not-streamed',
      {
        onStdout: (b) => {
          seen.push(b.toString());
          if (seen.join('') === 'first\n') writeFileSync(join(sd.root, 'go'), '');
        },
      },
    );
    expect(seen[0]).toBe('first\n');
    expect(seen.join('')).toBe('first\nsecond\n');
  });

  it('timeout kills the whole process group, background children included', async () => {
    const pidFile = join(sd.root, 'pids');
    const r = await c.exec(`sleep 100 & echo $! > pids; sleep 100 & echo $! >> pids; echo started; wait`, {
      timeoutMs: 700,
    });
    // Had the background children survived, they would hold the output pipe for 100 s: the call
    // would not have returned before the test's own timeout.
    expect(r).toMatchObject({ exitCode: null, timedOut: true, stdout: 'started\n' });
    const pids = pidsIn(pidFile);
    expect(pids).toHaveLength(2);
    await until(() => pids.every(gone), { what: 'the background children to be gone' });
  });

  it('does not leave background processes running after the command returns', async () => {
    const r = await c.exec('sleep 100 & echo $!');
    expect(r.exitCode).toBe(0);
    await until(() => gone(Number(r.stdout.trim())), { what: 'the background sleep to be gone' });
  });

  it('abort kills the command and rejects with ABORTED', async () => {
    const ac = new AbortController();
    const pidFile = join(sd.root, 'abort.pid');
    const running = c.exec('echo $$ > abort.pid.tmp; mv abort.pid.tmp abort.pid; sleep 100', {
      signal: ac.signal,
    });
    await until(() => existsSync(pidFile), { what: 'the command to start' });
    ac.abort();
    await expect(running).rejects.toMatchObject({ code: 'ABORTED' });
    const [pid] = pidsIn(pidFile);
    await until(() => gone(pid as number), { what: 'the aborted command to be gone' });
    expect((await c.exec('echo still usable')).stdout).toBe('still usable\n');
  });

  it('caps output and says so', async () => {
    const r = await c.exec('head -c 200000 /dev/zero | tr "\\0" a; echo done >&2');
    expect(r.stdout.length).toBe(64 * 1024);
    expect(r.truncated).toBe(true);
    expect(r.stderr).toBe('done\n');
    expect(r.exitCode).toBe(0);
  });

  it('reports a death by signal as exitCode null', async () => {
    expect((await c.exec('kill -9 $$')).exitCode).toBe(null);
  });
});
