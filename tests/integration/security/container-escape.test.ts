// A hostile model with `bash` in its own container, through the public API. Guarantees: no
// network, no capabilities, no Docker socket, a read-only root, no privilege gain through setuid
// binaries, no view of other containers, no way to touch sandboxd (it runs apart from the agent),
// a seccomp profile without io_uring, memfd_secret or message queues, and resource abuse (fork bomb,
// memory hog, /tmp or /dev/shm filler) ends inside the agent's own limits while the service and
// other tenants keep working.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { describeRuntimes } from '../runtimes.ts';
import { type Harness, type Loose, startHarness, text } from './harness.ts';

let h: Harness;
let agentA: string;
let agentB: string;

/** Runs a probe and returns stdout+stderr of the command as the model sees it. */
const sh = async (command: string, agent = agentA, key?: string, timeoutMs?: number): Promise<string> => {
  const r: Loose = await h.bash(key ?? h.keyA, agent, command, timeoutMs);
  return text(r);
};

const serviceAndNeighbourStillWork = async () => {
  expect((await h.http(undefined, 'GET', '/v1/health')).status).toBe(200);
  expect(await sh('echo neighbour-ok', agentB, h.keyB)).toBe('neighbour-ok');
};

describeRuntimes('container escape and abuse from bash', (engine) => {
  beforeAll(async () => {
    h = await startHarness({ docker: engine().docker, config: { gvisorTenants: '*' } });
    // gVisor's kernel keeps its file system caches in the container's memory too: 128 MiB on top
    // of the headroom (runtimes.ts) is not enough for `find /` there, 256 is.
    const memoryMb = engine().runtime === 'gvisor' ? 256 : 128;
    agentA = await h.agent(h.keyA, { sandbox: { memoryMb, pids: 64, ...engine().sandbox } });
    agentB = await h.agent(h.keyB, { sandbox: engine().sandbox });
    // B runs a recognisable process that A must not see.
    await h.calls(h.keyB, agentB, [
      [
        'bg',
        'bash',
        { command: 'exec sleep 3600 # tenant-b-marker', description: 'bg', run_in_background: true },
      ],
    ]);
    expect(await sh('id -u')).toBe('1000');
  });

  afterAll(async () => {
    await h?.close();
  });

  it('has no network: only loopback, no routes, connecting out fails at once', async () => {
    const out = await sh(
      [
        "awk 'NR>2{print $1}' /proc/net/dev | tr -d ':' | sort | tr '\\n' ' '; echo",
        "echo routes=$(awk 'NR>1' /proc/net/route | wc -l)",
        // TEST-NET-1 (RFC 5737): with no interface but lo the kernel refuses before any packet exists.
        "timeout 5 bash -c 'echo > /dev/tcp/192.0.2.1/80' 2>&1 | tail -1",
        'timeout 5 python3 -c "import socket; socket.create_connection((\'192.0.2.1\', 443), 3)" 2>&1 | tail -1',
      ].join('; '),
    );
    const [ifaces, routes, bashConnect, pyConnect] = out.split('\n');
    expect(ifaces?.trim()).toBe('lo');
    expect(routes).toBe('routes=0');
    // runc: "Network is unreachable"; gVisor's own empty network: "No route to host". At once, both.
    expect(bashConnect).toMatch(/unreachable|no route to host/i);
    expect(pyConnect).toMatch(/unreachable|OSError/i);
  });

  it('has no capabilities: mount, chown to root, raw sockets, user namespaces all fail', async () => {
    const out = await sh(
      [
        "grep -E '^Cap(Eff|Prm|Inh|Amb)' /proc/self/status | awk '{print $2}' | sort -u | tr -d '\\n'; echo",
        // The bounding set keeps SETUID and SETGID (sandboxd's, nobody can drop them without
        // CAP_SETPCAP), but with no-new-privileges and an empty permitted set no exec can raise them.
        "grep -E '^CapBnd' /proc/self/status | awk '{print $2}'",
        "python3 -c 'import os; os.setresuid(0, 0, 0)' 2>&1 | tail -1",
        'mkdir -p /tmp/m; mount -t tmpfs none /tmp/m >/dev/null 2>&1 && echo MOUNTED || echo mount-refused',
        'touch f; chown 0:0 f >/dev/null 2>&1 && echo CHOWNED || echo chown-refused',
        'python3 -c "import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)" >/dev/null 2>&1 && echo RAW || echo raw-refused',
        'python3 -c "import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)" >/dev/null 2>&1 && echo PACKET || echo packet-refused',
        'unshare -r id >/dev/null 2>&1 && echo USERNS || echo userns-refused',
        'unshare -m true >/dev/null 2>&1 && echo MNTNS || echo mntns-refused',
      ].join('; '),
    );
    expect(out.split('\n')).toEqual([
      '0000000000000000',
      '00000000000000c0',
      'PermissionError: [Errno 1] Operation not permitted',
      'mount-refused',
      'chown-refused',
      'raw-refused',
      'packet-refused',
      'userns-refused',
      'mntns-refused',
    ]);
  });

  it('has no Docker socket or Docker endpoint anywhere', async () => {
    const out = await sh(
      [
        'find / -xdev \\( -name "docker.sock" -o -name "containerd.sock" -o -name "*.sock" \\) 2>/dev/null | grep -v "^/proc" | head',
        'for s in /var/run/docker.sock /run/docker.sock; do [ -e $s ] || echo gone; done | grep -c gone',
        'grep -c docker.sock /proc/self/mountinfo',
        'env | grep -ci docker || true',
      ].join('; '),
    );
    expect(out.split('\n')).toEqual(['2', '0', '0']);
  });

  it('has a read-only root: writes to /usr, /etc, / and /home fail; only /workspace and /tmp are writable', async () => {
    const out = await sh(
      [
        'for p in /usr/pwned /etc/pwned /pwned /bin/pwned /home/agent/pwned /opt/sandboxd/sandboxd.cjs /opt/sandboxd/runtime/node; do (echo x > $p) 2>/dev/null && echo "WROTE $p"; done',
        '(echo x >> /etc/passwd) 2>/dev/null && echo "WROTE passwd"',
        'echo x > /workspace/ok && echo x > /tmp/ok && echo writable-ok',
      ].join('; '),
    );
    expect(out).toBe('writable-ok');
  });

  it('setuid binaries give no root (no-new-privileges), and /proc/sys is not writable', async () => {
    const out = await sh(
      [
        'echo | su -c id root >/dev/null 2>&1 && echo SU || echo su-refused',
        "grep NoNewPrivs /proc/self/status | awk '{print $2}'",
        'for f in $(find / -xdev -perm -4000 -type f 2>/dev/null); do [ -u "$f" ] && echo "$f"; done | wc -l | xargs test 0 -lt && echo has-setuid-files',
        'mount -t tmpfs none /tmp >/dev/null 2>&1 && echo MOUNTED || echo setuid-mount-refused',
        '(echo 1 > /proc/sys/kernel/sysrq) 2>/dev/null && echo SYSCTL || echo sysctl-refused',
        '(echo 1 > /proc/sys/vm/drop_caches) 2>/dev/null && echo DROP || echo drop-refused',
        '(echo c > /proc/sysrq-trigger) 2>/dev/null && echo SYSRQ || echo sysrq-refused',
        'id -u',
      ].join('; '),
    );
    expect(out.split('\n')).toEqual([
      'su-refused',
      // gVisor's /proc/<pid>/status has no NoNewPrivs line; su's refusal above is what holds there.
      ...(engine().runtime === 'gvisor' ? [] : ['1']),
      'has-setuid-files',
      'setuid-mount-refused',
      'sysctl-refused',
      'drop-refused',
      'sysrq-refused',
      '1000',
    ]);
  });

  it("cannot see other containers' or the host's processes", async () => {
    const out = await sh('ps -eo pid,user,args --no-headers');
    expect(out).not.toContain('tenant-b-marker');
    expect(out).not.toContain('dockerd');
    expect(out).not.toContain('containerd');
    expect(out).not.toMatch(/vitest|node .*host\//);
    const pids = out.split('\n').map((l) => Number(l.trim().split(/\s+/)[0]));
    expect(Math.min(...pids)).toBe(1);
  });

  it('a fork bomb hits the pids limit; the sandbox, the service and another tenant keep working', async () => {
    // The call's own 20 s timeout ends it whatever the bomb does.
    const bomb: Loose = await h.bash(h.keyA, agentA, 'b(){ b|b & }; b; sleep 8', 20_000);
    expect(bomb).toBeDefined();
    await serviceAndNeighbourStillWork();
    // The agent's own sandbox recovers: leftovers can be killed and new commands run.
    let ok = '';
    for (let i = 0; i < 20 && ok !== 'alive'; i++) {
      const r: Loose = await h.bash(
        h.keyA,
        agentA,
        'pkill -9 -u 1000 -f "b$" 2>/dev/null; echo alive',
        10_000,
      );
      ok = text(r).split('\n').at(-1) ?? '';
      if (ok !== 'alive') await new Promise((r) => setTimeout(r, 500));
    }
    expect(ok).toBe('alive');
    const count = Number(await sh('ps -e --no-headers | wc -l'));
    expect(count).toBeLessThanOrEqual(64);
  });

  it('a memory hog is killed inside its own limit; the sandbox, the service and another tenant keep working', async () => {
    const r: Loose = await h.bash(
      h.keyA,
      agentA,
      'python3 -c "x = bytearray(1024*1024*1024); print(\'ALLOC\' + \'ATED\')"; echo "exit=$?"',
      60_000,
    );
    expect(text(r)).not.toContain('ALLOCATED');
    // runc: the kernel kills the hog alone. gVisor: the host's OOM killer ends gVisor's kernel,
    // which holds the hog's memory, so the whole sandbox goes (the call says so) and is remade
    // at the next call on its workspace (docs/security.md, "gVisor").
    if (engine().runtime === 'runc') expect(text(r)).toMatch(/exit=(137|1)\b/);
    else expect(text(r)).toMatch(/exit=(137|1)\b|connection to sandboxd was lost/);
    await serviceAndNeighbourStillWork();
    // gVisor: the calls fail until the sandbox is remade (a generous guard, not a speed claim).
    await until(async () => (await sh('echo still-here')) === 'still-here', {
      what: "agent A's sandbox back",
      timeoutMs: engine().runtime === 'gvisor' ? 120_000 : 10_000,
      intervalMs: 1000,
    });
  });

  it('a tenant cannot raise its sandbox limits above the service maxima', async () => {
    const before = (await h.http(h.keyA, 'GET', '/v1/agents')).json.agents.length;
    const res = await h.http(h.keyA, 'POST', '/v1/agents', {
      sandbox: { memoryMb: 65_536, pids: 65_536, cpus: 64 },
    });
    expect(res.status).toBe(400);
    expect(res.json.error.code).toBe('LIMIT_EXCEEDED');
    expect((await h.http(h.keyA, 'GET', '/v1/agents')).json.agents.length).toBe(before);
  });

  it('cannot signal, trace or read sandboxd (it runs apart from the agent)', async () => {
    const out = await sh(
      [
        'sd=$(pgrep -xo node)',
        'kill -STOP $sd 2>&1 | grep -c "not permitted"',
        'kill -KILL $sd 2>&1 | grep -c "not permitted"',
        'cat /proc/$sd/environ >/dev/null 2>&1 && echo ENVIRON || echo environ-refused',
        '(echo x > /proc/$sd/fd/0) 2>/dev/null && echo STDIN || echo stdin-refused',
        `python3 -c "import ctypes,os; l=ctypes.CDLL(None,use_errno=True); print('ptrace', l.ptrace(16,$sd,0,0), os.strerror(ctypes.get_errno()))"`,
        "grep -E '^Uid' /proc/$sd/status | tr -s '\\t ' ' '",
      ].join('; '),
    );
    expect(out.split('\n')).toEqual([
      '1',
      '1',
      // KNOWN GAP under gVisor (docs/security.md, "gVisor"): its procfs lets the agent's uid read
      // sandboxd's environment (SANDBOXD_* settings only: the link token comes over stdin). Kept
      // visible here so that a runsc that closes it fails this line and the docs are updated.
      engine().runtime === 'gvisor' ? 'ENVIRON' : 'environ-refused',
      'stdin-refused',
      'ptrace -1 Operation not permitted',
      'Uid: 0 1000 0 1000',
    ]);
    expect(await sh('echo sandboxd-still-serving')).toBe('sandboxd-still-serving');
  });

  it('io_uring, memfd_secret, userfaultfd, message queues and keyrings are refused; everyday tools work', async () => {
    const probe = [
      'import ctypes, os, platform',
      'arm = platform.machine() == "aarch64"',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'buf = ctypes.create_string_buffer(256)',
      'calls = [("io_uring_setup", 425, (8, buf)), ("memfd_secret", 447, (0,)),',
      '         ("userfaultfd", 282 if arm else 323, (0,)), ("mq_open", 180 if arm else 240, (b"/q", 64, 0o600, 0)),',
      '         ("keyctl", 219 if arm else 250, (0, 0, 0, 0))]',
      'for name, nr, args in calls:',
      '    rc = libc.syscall(nr, *args)',
      '    print(name, "refused" if rc == -1 else "ALLOWED", os.strerror(ctypes.get_errno()) if rc == -1 else rc)',
    ].join('\n');
    const out = await sh(
      [
        `python3 -c '${probe}'`,
        // Everyday tools: python's multiprocessing semaphores (/dev/shm), git, ripgrep, node.
        'python3 -c "import multiprocessing as m; l = m.Lock(); l.acquire(); print(\'lock ok\')"',
        'git init -q /tmp/g && echo git ok',
        'echo needle > /tmp/n && rg -q needle /tmp/n && echo rg ok',
        "node -e \"require('fs').writeFileSync('/tmp/x', '1'); console.log('node ok')\"",
      ].join('; '),
    );
    // gVisor answers our profile's ENOSYS rules with EPERM (host/sandbox/docker/seccomp.ts).
    const errno = engine().runtime === 'gvisor' ? 'Operation not permitted' : 'Function not implemented';
    expect(out.split('\n')).toEqual([
      `io_uring_setup refused ${errno}`,
      `memfd_secret refused ${errno}`,
      `userfaultfd refused ${errno}`,
      `mq_open refused ${errno}`,
      'keyctl refused Operation not permitted',
      'lock ok',
      'git ok',
      'rg ok',
      'node ok',
    ]);
  });

  it('/dev/shm is bounded like /tmp', async () => {
    const out = await sh(
      'dd if=/dev/zero of=/dev/shm/fill bs=1M count=1024 2>&1 | grep -o "No space left" | head -1; du -sm /dev/shm/fill | cut -f1; rm -f /dev/shm/fill; grep " /dev/shm " /proc/mounts | grep -o "nosuid,nodev,noexec"',
      agentB,
      h.keyB,
    );
    const [msg, mb, flags] = out.split('\n');
    expect(msg).toBe('No space left');
    expect(Number(mb)).toBeLessThanOrEqual(64);
    // gVisor's /proc/mounts does not list Docker's /dev/shm mount: the bound above is what holds there.
    if (engine().runtime === 'runc') expect(flags).toBe('nosuid,nodev,noexec');
  });

  it('/tmp is size-limited', async () => {
    const out = await sh(
      'dd if=/dev/zero of=/tmp/fill bs=1M count=1024 2>&1 | grep -o "No space left" | head -1; du -sm /tmp/fill | cut -f1; rm -f /tmp/fill',
      agentB,
      h.keyB,
    );
    const [msg, mb] = out.split('\n');
    expect(msg).toBe('No space left');
    expect(Number(mb)).toBeLessThanOrEqual(64);
  });
});
