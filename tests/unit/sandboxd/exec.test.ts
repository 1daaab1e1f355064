import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SandboxdClient } from '../../../host/sandbox/sandboxd/client.ts';
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
    const seen: Array<{ at: number; text: string }> = [];
    const t0 = Date.now();
    const r = await c.exec('echo first; sleep 0.6; echo second', {
      onStdout: (b) => seen.push({ at: Date.now() - t0, text: b.toString() }),
    });
    expect(seen.map((s) => s.text).join('')).toBe('first\nsecond\n');
    expect(seen[0]?.text).toBe('first\n');
    expect(seen[0]?.at).toBeLessThan(r.durationMs - 300);
  });

  it('timeout kills the whole process group, background children included', async () => {
    const pidFile = join(sd.root, 'pids');
    const r = await c.exec(`sleep 100 & echo $! > pids; sleep 100 & echo $! >> pids; echo started; wait`, {
      timeoutMs: 700,
    });
    expect(r).toMatchObject({ exitCode: null, timedOut: true, stdout: 'started\n' });
    expect(r.durationMs).toBeLessThan(5000);
    const pids = pidsIn(pidFile);
    expect(pids).toHaveLength(2);
    await new Promise((res) => setTimeout(res, 100));
    expect(pids.filter((p) => !gone(p))).toEqual([]);
  });

  it('does not leave background processes running after the command returns', async () => {
    const r = await c.exec('sleep 100 & echo $!');
    expect(r.exitCode).toBe(0);
    expect(r.durationMs).toBeLessThan(3000);
    await new Promise((res) => setTimeout(res, 100));
    expect(gone(Number(r.stdout.trim()))).toBe(true);
  });

  it('abort kills the command and rejects with ABORTED', async () => {
    const ac = new AbortController();
    const running = c.exec('echo $$ > abort.pid; sleep 100', { signal: ac.signal });
    await new Promise((res) => setTimeout(res, 300));
    ac.abort();
    await expect(running).rejects.toMatchObject({ code: 'ABORTED' });
    await new Promise((res) => setTimeout(res, 200));
    expect(gone(pidsIn(join(sd.root, 'abort.pid'))[0] as number)).toBe(true);
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
