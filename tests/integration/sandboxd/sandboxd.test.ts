// sandboxd in the real sandbox image, reached the way the docker provider reaches it: a hardened
// container created with OpenStdin (StdinOnce false, no TTY), attached BEFORE start, stdout demuxed.
// Round-trips every kind of call, re-attaches to prove jobs and the session survive a detach, proves
// from bash that the agent cannot touch sandboxd or its helpers (they run apart from it: real uid 0,
// effective uid 1000). What a round trip costs against `docker exec`: bench/sandbox.ts.

import { execFileSync } from 'node:child_process';
import { PassThrough, type Writable } from 'node:stream';
import Docker from 'dockerode';
import { nanoid } from 'nanoid';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { connectSandboxd, type SandboxdClient } from '../../../host/sandbox/sandboxd/client.ts';
import { until } from '../../helpers/until.ts';

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

/** Runs a command as root in the container (docker exec); true when it exits 0. */
const inContainer = (...cmd: string[]): boolean => {
  try {
    execFileSync('docker', ['exec', '-u', '0', container.id, ...cmd], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

let c: SandboxdClient;
beforeAll(async () => {
  const image = process.env.DSH_SANDBOX_IMAGE ?? inject('sandboxImage');
  container = await docker.createContainer({
    name: `dsh-sandboxd-it-${runId}`,
    Image: image,
    Labels: { [LABEL]: runId },
    User: '0:0',
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
      CapAdd: ['SETUID', 'SETGID'],
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
  it('says hello from the image (its own Node 22 runtime, /workspace) and round-trips file operations', async () => {
    expect(c.info).toMatchObject({ root: '/workspace', node: expect.stringMatching(/^v22\./) });
    await until(() => stderr.includes('sandboxd: ready'), { what: "sandboxd's ready line on stderr" });
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
    const job = await c.jobs.start('for i in 1 2 3 4; do echo tick $i; sleep 0.25; done; : > ticked');
    c.close();
    detach(); // the control plane goes away; the container and sandboxd keep running
    await until(() => inContainer('test', '-e', '/workspace/ticked'), {
      what: 'the job to finish while detached',
      timeoutMs: 30_000,
    });
    expect((await container.inspect()).State.Running).toBe(true);
    c = await attachAndConnect();
    const out = await c.jobs.output(job.id, { wait: true, timeoutMs: 10_000 });
    expect(out).toMatchObject({ status: 'exited', exitCode: 0, output: 'tick 1\ntick 2\ntick 3\ntick 4\n' });
    expect((await c.jobs.list()).map((j) => j.id)).toContain(job.id);
  });

  it('starts commands through its spawner, which pkill -f python misses, the agent cannot kill and a kill only restarts', async () => {
    const parent = async (): Promise<string> => {
      for (let i = 0; i < 100; i++) {
        const args = (await c.exec('ps -o args= -p $PPID')).stdout.trim();
        if (args.startsWith('sandboxd-spawner')) return args;
        await new Promise((r) => setTimeout(r, 50));
      }
      return 'never';
    };
    expect(await parent()).toBe(
      'sandboxd-spawner -I -S -c exec(open(3).read()) /tmp/.sandboxd-fifos 1000:1000',
    );
    expect((await c.exec('pgrep -f pyth[o]n || echo none')).stdout).toBe('none\n');
    // Through the spawner a command's bash is Debian's bash-static (exec.ts), which reads as bash.
    const same = `[ "$BASH_VERSION" = "$(/usr/bin/bash -c 'echo $BASH_VERSION')" ] && echo same release`;
    expect((await c.exec(`echo "$0 $BASH"; readlink /proc/$$/exe; ${same}; echo é`)).stdout).toBe(
      'bash /usr/bin/bash\n/usr/bin/bash-static\nsame release\né\n',
    );
    // Past the window in which the spawner starts a command (the next test's subject).
    const pastStart = `while [ "$(awk '/^Uid:/{print $2}' /proc/$PPID/status)" = 1000 ]; do :; done`;
    expect((await c.exec(`${pastStart}; kill -9 $PPID 2>&1; echo rc=$?`)).stdout).toMatch(
      /Operation not permitted\nrc=1\n$/,
    );
    const spawner = (await c.exec('echo $PPID')).stdout.trim();
    // Root in the container (not the agent) kills it; the command outlives it, exit status unknown.
    // It runs until the test lets it end after the kill (or gives up after 10 s).
    const running = c.exec(
      ': > running; for i in $(seq 100); do [ -e go ] && break; sleep 0.1; done; [ -e go ] && echo after',
    );
    await until(() => c.fs.stat('running').then(Boolean, () => false), { what: 'the command to start' });
    execFileSync('docker', ['exec', '-u', '0', container.id, 'kill', '-9', spawner]);
    await c.fs.writeFile('go', '');
    expect(await running).toMatchObject({ stdout: 'after\n', exitCode: null });
    // Issued at once, while the spawner restarts: it waits for nothing and never fails.
    const burst = await Promise.all(Array.from({ length: 5 }, (_, i) => c.exec(`echo still fine ${i}`)));
    expect(burst.map((r) => r.stdout)).toEqual(Array.from({ length: 5 }, (_, i) => `still fine ${i}\n`));
    expect(await parent()).toMatch(/^sandboxd-spawner/);
    expect(stderr).toMatch(/spawner: stopped \(SIGKILL\); restarting/);
  });

  it('runs apart from the agent: bash can neither signal, trace nor read sandboxd and its helpers', async () => {
    const sd = c.info.pid;
    const t = await c.terminals.open({ command: ['sleep', '600'] });
    const helper = (await c.exec(`ps -o ppid= -p ${t.pid}`)).stdout.trim();
    const spawner = (await c.exec('echo $PPID')).stdout.trim();
    const ptrace = (pid: string | number) =>
      `python3 -c "import ctypes,os; l=ctypes.CDLL(None,use_errno=True); r=l.ptrace(16,${pid},0,0); print('ptrace', r, os.strerror(ctypes.get_errno()))"`;
    // The spawner's one window (docs/security.md, sandboxd's identity): while it starts a command
    // its real uid is the agent's, and the command it just started (this one) can run before it
    // takes uid 0 back; under load the kills below landed in it. So each command first waits,
    // reading /proc/<pid>/status (readable by the agent), until its target's real uid is not the
    // agent's, and asserts what holds outside that window.
    const outsideWindow = (pid: string | number) =>
      `while [ "$(awk '/^Uid:/{print $2}' /proc/${pid}/status)" = 1000 ]; do :; done`;
    for (const pid of [sd, spawner, helper]) {
      const out = (
        await c.exec(
          [
            outsideWindow(pid),
            `kill -STOP ${pid} 2>&1 | grep -c 'not permitted'`,
            `kill -KILL ${pid} 2>&1 | grep -c 'not permitted'`,
            `kill -0 ${pid} 2>&1 | grep -c 'not permitted'`,
            `cat /proc/${pid}/environ >/dev/null 2>&1 && echo ENVIRON || echo environ-refused`,
            `head -c 1 /proc/${pid}/mem >/dev/null 2>&1 && echo MEM || echo mem-refused`,
            `ls /proc/${pid}/fd >/dev/null 2>&1 && echo FDS || echo fds-refused`,
            `(echo x > /proc/${pid}/fd/0) 2>/dev/null && echo STDIN || echo stdin-refused`,
            ptrace(pid),
            `stat -c %u /proc/${pid}/environ`,
          ].join('; '),
        )
      ).stdout;
      expect(out.split('\n'), `pid ${pid}`).toEqual([
        '1',
        '1',
        '1',
        'environ-refused',
        'mem-refused',
        'fds-refused',
        'stdin-refused',
        'ptrace -1 Operation not permitted',
        '0', // non-dumpable: its /proc entries belong to root
        '',
      ]);
    }
    expect(stderr).toMatch(/apart from the agent: uid 0\/1000\/0, non-dumpable/);
    // The spawner in use has sandboxd's split of uids, gids and groups (spawner-answers.ts checks
    // all three before using it), read from outside (docker exec), not through the spawner.
    const servers = /servers' gid (\d+)/.exec(stderr)?.[1];
    expect(servers).not.toBe('1000');
    const ids = execFileSync('docker', [
      'exec',
      '-u',
      '0',
      container.id,
      'grep',
      '-E',
      '^(Uid|Gid|Groups)',
      `/proc/${spawner}/status`,
    ])
      .toString()
      .replace(/[\t ]+/g, ' ');
    expect(ids).toBe(`Uid: 0 1000 0 1000\nGid: ${servers} 1000 ${servers} 1000\nGroups: \n`);
    // The agent: uid 1000 only, no capability, cannot become anyone else; the spawner's FIFOs are hidden.
    const me = await c.exec(
      [
        "grep -E '^(Uid|Gid|Groups|CapPrm|CapEff|CapAmb|NoNewPrivs)' /proc/self/status | tr -s '\t ' ' '",
        "python3 -c 'import os; os.setuid(0)' 2>&1 | tail -1",
        'ls /tmp/.sandboxd-fifos 2>&1 | grep -c denied',
      ].join('; '),
    );
    expect(me.stdout.split('\n')).toEqual([
      'Uid: 1000 1000 1000 1000',
      'Gid: 1000 1000 1000 1000',
      'Groups: ',
      'CapPrm: 0000000000000000',
      'CapEff: 0000000000000000',
      'CapAmb: 0000000000000000',
      'NoNewPrivs: 1',
      'PermissionError: [Errno 1] Operation not permitted',
      '1',
      '',
    ]);
    // A terminal's program and a job run as the agent too.
    const job = await c.jobs.start('grep -E "^(Uid|CapPrm)" /proc/self/status');
    expect((await c.jobs.output(job.id, { wait: true })).output.replace(/[\t ]+/g, ' ')).toBe(
      'Uid: 1000 1000 1000 1000\nCapPrm: 0000000000000000\n',
    );
    expect((await c.exec(`grep -E '^Uid' /proc/${t.pid}/status | tr -s '\t ' ' '`)).stdout).toBe(
      'Uid: 1000 1000 1000 1000\n',
    );
    await c.terminals.close(t.id);
    // Files sandboxd writes belong to the agent.
    await c.fs.writeFile('owned/by/agent.txt', 'x');
    expect((await c.exec('stat -c %u:%g owned owned/by owned/by/agent.txt')).stdout).toBe(
      '1000:1000\n1000:1000\n1000:1000\n',
    );
  });

  it('an agent signalling the spawner while it starts commands gets no id but its own, and the spawner comes back', async () => {
    // The spawner's real uid is the agent's while it starts a command (spawner-script.ts popen),
    // so a loop of kills may land in that window: at worst it ends the spawner (restarted).
    const spawner = (await c.exec('echo $PPID')).stdout.trim();
    const hammer = await c.jobs.start(
      `while [ ! -e stop ] && [ $SECONDS -lt 60 ]; do kill -KILL ${spawner} 2>/dev/null && echo hit; done; echo done`,
    );
    const ids = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const r = await c
        .exec("grep -E '^(Uid|Gid|CapPrm)' /proc/self/status | tr -s '\\t ' ' '")
        .catch((e: { code?: string }) => ({ stdout: `failed: ${e.code}` }));
      ids.add(r.stdout);
    }
    await c.fs.writeFile('stop', '');
    await c.jobs.output(hammer.id, { wait: true, timeoutMs: 60_000 });
    await c.fs.remove('stop').catch(() => {});
    for (const out of ids)
      expect([
        'Uid: 1000 1000 1000 1000\nGid: 1000 1000 1000 1000\nCapPrm: 0000000000000000\n',
        'failed: TOOL_FAILED',
      ]).toContain(out);
    // Commands run as the agent again, through a spawner.
    const back = await until(
      async () => {
        const r = await c.exec('ps -o args= -p $PPID; grep ^Uid /proc/self/status | tr -s "\\t " " "');
        return r.stdout.startsWith('sandboxd-spawner') ? r.stdout : undefined;
      },
      { what: 'commands through a spawner again' },
    );
    expect(back).toMatch(/\nUid: 1000 1000 1000 1000\n$/);
  });

  it('takes nothing from job records the agent forged: no signal to itself, no read of its own /proc', async () => {
    const job = await c.jobs.start('sleep 30');
    const dir = `/tmp/sandboxd/jobs/${job.id}`;
    await c.exec(
      `python3 -c "import json; p='${dir}/job.json'; r=json.load(open(p)); r['pid']=${c.info.pid}; open(p+'.x','w').write(json.dumps(r))" && mv ${dir}/job.json.x ${dir}/job.json && rm ${dir}/output && ln -s /proc/self/environ ${dir}/output`,
    );
    await c.jobs.kill(job.id, 'SIGKILL');
    expect(await c.ping()).toBeGreaterThan(0);
    const out = await c.jobs.output(job.id).catch((e: { code?: string }) => e.code);
    expect(JSON.stringify(out)).not.toMatch(/SANDBOXD_|PATH=/);
    await c.exec('pkill -9 -f "sleep 30" || true');
  });
});
