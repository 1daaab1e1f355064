// The spawner in-process (it only needs python3 and /proc), and exec through a local sandboxd using it.

import { realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launch, type Proc } from '../../../sandbox-image/sandboxd/launch.ts';
import { createSpawner, type Spawner, type SpawnRequest } from '../../../sandbox-image/sandboxd/spawner.ts';
import { until } from '../../helpers/until.ts';
import { gone, useLocalSandboxd } from './harness.ts';

const cwd = realpathSync(tmpdir());
const bash = (command: string, stdin = false): SpawnRequest => ({
  file: 'bash',
  args: ['-c', command],
  cwd,
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ONLY: 'this' },
  stdin,
});
const ready = async (s: Spawner): Promise<void> => {
  s.start();
  for (let i = 0; i < 300 && s.state !== 'ready'; i++) await new Promise((r) => setTimeout(r, 20));
  expect(s.state).toBe('ready');
};
const collect = async (p: Proc, input?: string) => {
  let stdout = '';
  let stderr = '';
  p.stdout.on('data', (b: Buffer) => {
    stdout += b.toString();
  });
  p.stderr.on('data', (b: Buffer) => {
    stderr += b.toString();
  });
  if (input !== undefined) p.stdin?.end(input);
  const exit = await p.exited;
  await p.closed;
  return { ...exit, stdout, stderr };
};

describe('spawner', () => {
  const logs: string[] = [];
  let s: Spawner;
  beforeAll(async () => {
    s = createSpawner({ log: (l) => logs.push(l) });
    await ready(s);
  });
  afterAll(() => s?.stop());

  it('runs a command in its own process group with the given cwd, env and stdin', async () => {
    const p = await launch(
      bash('echo "$ONLY $(pwd)"; cut -d" " -f5 /proc/$$/stat; cat; echo e >&2; exit 3', true),
      s,
    );
    expect(p.via).toBe('spawner');
    const r = await collect(p, 'in\n');
    expect(r).toEqual({ code: 3, signal: null, stdout: `this ${cwd}\n${p.pid}\nin\n`, stderr: 'e\n' });
  });

  it('runs a faster binary in its stead when asked, argv[0] kept (exec: bash-static for bash)', async () => {
    const r = await collect(
      await launch({ ...bash('echo "$0"; readlink /proc/$$/exe'), fasterFile: realpathSync('/bin/dash') }, s),
    );
    expect(r).toEqual({ code: 0, signal: null, stdout: `bash\n${realpathSync('/bin/dash')}\n`, stderr: '' });
  });

  it('keeps the output of a command that ends before its pipes are opened, and gives EOF without stdin', async () => {
    const r = await collect(await launch(bash('head -c 200000 /dev/zero | tr "\\0" a; cat'), s));
    expect(r.stdout.length).toBe(200_000);
    expect(r.code).toBe(0);
  });

  it('reports a death by signal, and a start failure as an error', async () => {
    expect(await collect(await launch(bash('kill -TERM $$'), s))).toMatchObject({
      code: null,
      signal: 'SIGTERM',
    });
    await expect(launch({ ...bash('true'), cwd: '/nonexistent/dir' }, s)).rejects.toMatchObject({
      code: 'ENOENT',
    });
    await expect(launch({ ...bash('true'), file: '/nonexistent/bash' }, s)).rejects.toMatchObject({
      code: 'ENOENT',
    });
  });

  it('runs many commands at once', async () => {
    const rs = await Promise.all(
      Array.from({ length: 20 }, async (_, i) => collect(await launch(bash(`echo ${i}; exit ${i}`), s))),
    );
    expect(rs.map((r) => [r.code, r.stdout])).toEqual(Array.from({ length: 20 }, (_, i) => [i, `${i}\n`]));
  });

  it('survives being killed: running commands still end (status unknown), and it restarts', async () => {
    const before = s.pid;
    const p = await launch(bash('sleep 0.4; echo done'), s);
    const r = collect(p);
    process.kill(before, 'SIGKILL');
    expect(await r).toEqual({ code: null, signal: null, stdout: 'done\n', stderr: '' });
    const next = await launch(bash('echo ok'), s); // started the usual way while the spawner restarts
    expect(next.via).toBe('node');
    expect((await collect(next)).stdout).toBe('ok\n');
    await ready(s);
    expect(s.pid).not.toBe(before);
    expect((await launch(bash('true'), s)).via).toBe('spawner');
    expect(logs.join('\n')).toMatch(/restarting/);
  });

  it('a command issued while the spawner dies (before its death is seen) starts another way, never fails', async () => {
    await ready(s);
    const before = s.pid;
    process.kill(before, 'SIGKILL'); // this turn still sees it ready: the request goes to a dead spawner
    expect(s.state).toBe('ready');
    const p = await launch(bash('echo started'), s);
    expect(p.via).toBe('node');
    expect(await collect(p)).toMatchObject({ code: 0, stdout: 'started\n' });
    await ready(s);
    expect(s.pid).not.toBe(before);
  });

  it('a stopped spawner does not hold a command that ended: it is killed and the call ends', async () => {
    const before = s.pid;
    const r = collect(await launch(bash('sleep 0.2; echo done'), s));
    process.kill(before, 'SIGSTOP');
    expect(await r).toEqual({ code: null, signal: null, stdout: 'done\n', stderr: '' });
    expect(logs.join('\n')).toMatch(/does not reap pid/);
    await ready(s);
    expect(s.pid).not.toBe(before);
  });
});

describe('spawner unavailable', () => {
  it('without python3 it turns itself off and commands start through child_process', async () => {
    const logs: string[] = [];
    const s = createSpawner({ python: '/nonexistent/python3', log: (l) => logs.push(l) });
    s.start();
    for (let i = 0; i < 100 && s.state !== 'off'; i++) await new Promise((r) => setTimeout(r, 10));
    expect(s.state).toBe('off');
    const p = await launch(bash('echo $ONLY'), s);
    expect(p.via).toBe('node');
    expect((await collect(p)).stdout).toBe('this\n');
    expect(logs.join('\n')).toMatch(/not found/);
  });
});

describe('exec through sandboxd', () => {
  const local = useLocalSandboxd();

  it('uses the spawner once it is up, and its commands still die with their group', async () => {
    let parent = '';
    for (let i = 0; i < 100 && parent !== 'sandboxd-spawn'; i++) {
      parent = (await local.c.exec('cat /proc/$PPID/comm')).stdout.trim();
      if (parent !== 'sandboxd-spawn') await new Promise((r) => setTimeout(r, 50));
    }
    expect(parent).toBe('sandboxd-spawn');
    const r = await local.c.exec('sleep 100 & echo $!');
    expect(r.exitCode).toBe(0);
    await until(() => gone(Number(r.stdout.trim())), { what: 'the background sleep to be gone' });
  });
});

describe('exec under load', () => {
  const local = useLocalSandboxd();

  it('keeps all the output of many concurrent commands while the host reads slowly', async () => {
    const rs = await Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        local.c.exec(`head -c ${i * 2000} /dev/zero | tr "\\0" x; echo e${i} >&2; exit ${i % 7}`),
      ),
    );
    const wrong = rs.flatMap((r, i) =>
      r.exitCode === i % 7 && r.stdout.length === i * 2000 && r.stderr === `e${i}\n` ? [] : [i],
    );
    expect(wrong).toEqual([]);
  });
});
