// sandboxd in the real sandbox image, reached the way the docker provider reaches it: a hardened
// container created with OpenStdin (StdinOnce false, no TTY), attached BEFORE start, stdout demuxed.
// Round-trips every kind of call, re-attaches to prove jobs and the session survive a detach, and
// measures the round trip of `stat`, `exec true` and `docker exec true` (printed, loosely asserted).

import { execFileSync } from 'node:child_process';
import { PassThrough, type Writable } from 'node:stream';
import Docker from 'dockerode';
import { nanoid } from 'nanoid';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectSandboxd, type SandboxdClient } from '../../../host/sandbox/sandboxd/client.ts';

const docker = new Docker();
const LABEL = 'dsh.test.sandboxd';
const runId = nanoid(8)
  .toLowerCase()
  .replace(/[^a-z0-9]/g, 'x');
let container: Docker.Container;
let detach: () => void = () => {};
let stderr = '';

const attachAndConnect = async (start = false): Promise<SandboxdClient> => {
  const socket = (await container.attach({
    stream: true,
    stdin: true,
    stdout: true,
    stderr: true,
    hijack: true,
  })) as NodeJS.ReadWriteStream;
  const out = new PassThrough();
  const err = new PassThrough();
  docker.modem.demuxStream(socket, out, err);
  socket.once('end', () => out.end());
  err.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  detach = () => (socket as unknown as { destroy(): void }).destroy();
  if (start) await container.start();
  return connectSandboxd({ input: out, output: socket as unknown as Writable, timeoutMs: 20_000 });
};

const stats = (samples: number[]) => {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) =>
    Number((s[Math.min(s.length - 1, Math.floor(q * s.length))] as number).toFixed(2));
  return { n: s.length, median: at(0.5), p95: at(0.95), min: at(0) };
};
const timeIt = async (n: number, fn: () => Promise<unknown>): Promise<number[]> => {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
  return out;
};

let c: SandboxdClient;
beforeAll(async () => {
  const image = process.env.DSH_SANDBOX_IMAGE ?? inject('sandboxImage');
  container = await docker.createContainer({
    name: `dsh-sandboxd-it-${runId}`,
    Image: image,
    Labels: { [LABEL]: runId },
    User: '1000:1000',
    OpenStdin: true,
    StdinOnce: false,
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
    NetworkDisabled: true,
    HostConfig: {
      NetworkMode: 'none',
      CapDrop: ['ALL'],
      SecurityOpt: ['no-new-privileges:true'],
      ReadonlyRootfs: true,
      Tmpfs: {
        '/workspace': 'rw,nosuid,nodev,size=64m,uid=1000,gid=1000',
        '/tmp': 'rw,nosuid,nodev,size=64m,mode=1777',
      },
      Init: true,
      LogConfig: { Type: 'none', Config: {} },
      PidsLimit: 256,
      Memory: 512 * 1024 * 1024,
    },
  });
  c = await attachAndConnect(true);
});
afterAll(async () => {
  c?.close();
  detach();
  await container?.remove({ force: true }).catch(() => {});
});

describe('sandboxd in the sandbox image', () => {
  it('says hello from the image (Node 18, /workspace) and round-trips file operations', async () => {
    expect(c.info).toMatchObject({ root: '/workspace', node: expect.stringMatching(/^v18\./) });
    await c.fs.writeFile('src/app.ts', 'export const answer = 42;\n// TODO: more\n');
    expect((await c.fs.readFile('/workspace/src/app.ts')).toString()).toContain('answer = 42');
    expect(await c.fs.stat('src')).toMatchObject({ path: '/workspace/src', type: 'directory' });
    expect(await c.fs.list('src')).toEqual([{ name: 'app.ts', type: 'file', size: 40 }]);
    expect((await c.fs.glob('**/*.ts')).paths).toEqual(['/workspace/src/app.ts']);
    // ripgrep is in the image: grep uses it (ripgrep syntax: \d works, lookaround would not).
    expect((await c.fs.grep('TODO|\\d{2}', { include: '*.ts' })).matches).toEqual([
      { path: '/workspace/src/app.ts', line: 1, text: 'export const answer = 42;' },
      { path: '/workspace/src/app.ts', line: 2, text: '// TODO: more' },
    ]);
    await c.fs.rename('src', 'lib');
    await c.fs.remove('lib', { recursive: true });
    expect(await c.fs.list('.')).toEqual([]);
  });

  it('runs commands as the agent user inside the hardened container', async () => {
    const r = await c.exec('id -u; pwd; touch /etc/x 2>&1 || true; echo err >&2; exit 4');
    expect(r.exitCode).toBe(4);
    expect(r.stdout).toMatch(/^1000\n\/workspace\n.*Read-only file system/s);
    expect(r.stderr).toBe('err\n');
    const t = await c.exec('sleep 100 & sleep 100', { timeoutMs: 500 });
    expect(t).toMatchObject({ timedOut: true, exitCode: null });
    expect((await c.exec('pgrep -c sleep || true')).stdout.trim()).toBe('0');
  });

  it('refuses a symlink to / for reads and writes even inside the container', async () => {
    await c.exec('ln -s / /workspace/root-link');
    await expect(c.fs.readFile('root-link/etc/passwd')).rejects.toMatchObject({
      code: 'PATH_OUTSIDE_WORKSPACE',
    });
    await expect(c.fs.writeFile('root-link/tmp/planted', 'x')).rejects.toMatchObject({
      code: 'PATH_OUTSIDE_WORKSPACE',
    });
    expect((await c.exec('ls /tmp/planted 2>/dev/null || echo absent')).stdout).toBe('absent\n');
  });

  it('keeps jobs and their output across a detach and re-attach', async () => {
    const job = await c.jobs.start('for i in 1 2 3 4; do echo tick $i; sleep 0.25; done');
    c.close();
    detach(); // the control plane goes away; the container and sandboxd keep running
    await new Promise((r) => setTimeout(r, 1500));
    expect((await container.inspect()).State.Running).toBe(true);
    c = await attachAndConnect();
    const out = await c.jobs.output(job.id, { wait: true, timeoutMs: 10_000 });
    expect(out).toMatchObject({ status: 'exited', exitCode: 0, output: 'tick 1\ntick 2\ntick 3\ntick 4\n' });
    expect((await c.jobs.list()).map((j) => j.id)).toContain(job.id);
  });

  it('starts commands through its spawner, which pkill -f python misses and a kill only restarts', async () => {
    const parent = async (): Promise<string> => {
      for (let i = 0; i < 100; i++) {
        const args = (await c.exec('ps -o args= -p $PPID')).stdout.trim();
        if (args.startsWith('sandboxd-spawner')) return args;
        await new Promise((r) => setTimeout(r, 50));
      }
      return 'never';
    };
    expect(await parent()).toBe('sandboxd-spawner -I -S -c exec(open(3).read())');
    expect((await c.exec('pgrep -f pyth[o]n || echo none')).stdout).toBe('none\n');
    // The command outlives its spawner; its exit status is then unknown.
    expect(await c.exec('kill -9 $PPID; sleep 0.2; echo after')).toMatchObject({
      stdout: 'after\n',
      exitCode: null,
    });
    expect((await c.exec('echo still fine')).stdout).toBe('still fine\n');
    expect(await parent()).toMatch(/^sandboxd-spawner/);
    expect(stderr).toMatch(/spawner: stopped \(SIGKILL\); restarting/);
  });

  it('measures round trips: stat and exec over the attach stream vs docker exec', async () => {
    await c.fs.writeFile('probe.txt', 'x');
    for (let i = 0; i < 20; i++) await c.fs.stat('probe.txt'); // warm up
    const stat = stats(await timeIt(300, () => c.fs.stat('probe.txt')));
    const ping = stats(await timeIt(300, () => c.ping()));
    const execTrue = stats(await timeIt(30, () => c.exec('true')));
    const dockerExec = stats(
      await timeIt(8, async () => {
        const e = await container.exec({
          Cmd: ['true'],
          AttachStdout: true,
          AttachStderr: true,
          User: '1000:1000',
        });
        const s = await e.start({ hijack: true, stdin: false });
        await new Promise((r) => {
          s.on('end', r);
          s.resume();
        });
      }),
    );
    const cli = stats(
      await timeIt(3, async () =>
        execFileSync('docker', ['exec', container.id, 'true'], { env: { ...process.env, DOCKER_HOST: '' } }),
      ),
    );
    console.log(
      JSON.stringify(
        { roundTripMs: { ping, stat, execTrue, dockerExecApi: dockerExec, dockerExecCli: cli } },
        null,
        1,
      ),
    );
    expect(stat.median).toBeLessThan(dockerExec.median);
    expect(execTrue.median).toBeLessThan(dockerExec.median);
    expect(stderr).toContain('sandboxd: ready');
  });
});
