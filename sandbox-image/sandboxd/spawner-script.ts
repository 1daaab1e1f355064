// The spawner's program: a small python3 loop that sandboxd starts once and asks to start commands,
// because a fork of sandboxd's large Node process costs 10-20 ms and a vfork from python about 1 ms.
// Protocol: one JSON object per line, requests on the spawner's stdin, events on its stdout.
//   → {"t":"spawn","id":N,"argv":[b64..],"exe"?:b64,"cwd":b64,"env":[[b64,b64]..],"stdin":bool,"server":bool}
//     (exe: the binary to run in argv[0]'s stead, argv[0] unchanged)
//   ← {"t":"got","id":N}  (read, about to start it: a request without it was never started)
//   ← {"t":"spawned","id":N,"pid":P,"fifos":[stdin|"",stdout,stderr]}  or  {"t":"error","id":N,...}
//   → {"t":"release","id":N}  (sandboxd has opened each of the FIFOs)
//   ← {"t":"exit","id":N,"code":C|null,"signal":S|null}
//   ← {"t":"ready","pid":P,"probe":F} once at start: FIFO F holds "ok", for sandboxd to check that it
//     can open our FIFOs (it then sends {"t":"release","id":0}).
// The command's stdio are FIFOs (pipes with a name, so that sandboxd can open its ends: Node cannot
// receive descriptors, and /proc/<spawner>/fd is closed to it once the spawner runs apart from the
// agent, see identity.ts). They are made in argv[1], a root-owned directory of mode 1733 in a
// container, under random names: nobody can list it, so only sandboxd, told the names, opens them.
// Until the release the spawner keeps an O_RDWR descriptor of each FIFO open: that keeps output
// written by a command that ends at once in the pipe, and lets sandboxd open the stdin FIFO for
// writing; at the release it closes them and unlinks the names. Strings travel as base64 of their
// UTF-8 bytes so that what reaches the command is byte for byte what child_process.spawn would pass.
// The command runs in a session of its own (pid = process group id) with all three of the agent's
// ids when sandboxd runs apart from the agent, or with `server` the agent's uid and the servers' gid
// (identity.ts), taken from the spawner's at its exec (popen); sandboxd kills the group.
// Run as `python3 -c SCRIPT BOX [UID:GID]`: UID:GID, the agent's ids, is given when sandboxd runs
// apart from the agent, so that the spawner can take its split identity again where the runtime's
// execve did not keep it (gVisor: apart_again).
// When stdin closes (sandboxd is gone) the spawner kills the groups it started and exits.

import { PYTHON_PRELUDE } from './identity.ts';

export const SPAWNER_SCRIPT = String.raw`${PYTHON_PRELUDE}
import base64, ctypes, errno, json, os, secrets, select, signal, subprocess, sys

def b(s):
    return base64.b64decode(s)

def caps(effective_from_permitted):
    # capget/capset (version 3: two 32-bit words of each set): effective = permitted, or none.
    libc = ctypes.CDLL(None, use_errno=True)
    head = (ctypes.c_uint32 * 2)(0x20080522, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable; twice
    if libc.capget(head, data) != 0:
        raise OSError(ctypes.get_errno(), 'capget')
    data[0], data[3] = (data[1], data[4]) if effective_from_permitted else (0, 0)
    if libc.capset(head, data) != 0:
        raise OSError(ctypes.get_errno(), 'capset')

def apart_again(spec):
    # gVisor's execve (runsc 20221219) gives a process whose real uid is 0 its real ids back: we
    # arrive as root (0 0 0, gid the servers' three times) with CAP_SETUID and CAP_SETGID permitted
    # but not in effect, not with sandboxd's split. sandboxd names the agent's
    # ids (argv[2]) and we take the split again: the two capabilities into effect for the two
    # calls, effective uid and gid the agent's, real and saved the ones we have (0, the servers'
    # gid), then no capability in effect (leaving effective uid 0 clears them; we make sure), as
    # the spawner is under runc. Any other state is left alone, and a step that fails leaves uid 0
    # (the uid goes last): sandboxd checks the uids we end with and gives a spawner not apart up.
    if not spec or os.getresuid() != (0, 0, 0):
        return
    uid, gid = (int(x) for x in spec.split(':'))
    if uid == 0 or gid == 0:
        return
    try:
        rg = os.getresgid()[0]
        caps(True)
        os.setresgid(rg, gid, rg)
        os.setresuid(0, uid, 0)
        caps(False)
    except OSError as e:
        sys.stderr.write('sandboxd: spawner: cannot run apart again: %s\n' % e)

def main():
    try:
        ctypes.CDLL(None).prctl(15, b'sandboxd-spawn', 0, 0, 0)  # PR_SET_NAME: comm, for ps
    except Exception:
        pass
    box = sys.argv[1]
    apart_again(sys.argv[2] if len(sys.argv) > 2 else '')
    os.chdir('/')
    r, e, _s = os.getresuid()
    rg, eg, _sg = os.getresgid()
    # Apart from the agent (uids 0, the agent's, 0; gids the servers', the agent's, the servers'), a
    # command takes all three of the agent's ids (for a server, a program on pipes: the agent's uid,
    # the servers' gid) from ours at its exec: for the start alone we become real and effective the
    # command's ids, saved still 0 and our other gid, and Popen starts it with vfork (it forks when
    # asked to change ids in the child: a fork marks this process's pages copy-on-write, and its
    # next writes fault them back in: 0.6 ms of CPU a command in bench/sandboxd-spawn.ts, more as
    # the heap grows; issue 33). execve makes the saved
    # ids the effective ones: the command has all three, no id 0, so no capability (and
    # no-new-privileges stays on). Each switch stays within our real, effective and saved ids: no
    # capability is used, and a saved uid of 0 keeps ours (the way back). Groups: none (sandboxd
    # dropped them). While our real uid is the agent's (the start of one command, well under a
    # millisecond), the agent's processes may signal us (not trace us or read our /proc: the saved
    # uid 0 and our being non-dumpable keep that closed): a kill or stop in that window ends or
    # stops only this sandbox's spawner, which sandboxd restarts, or kills when stuck
    # (spawner-watch.ts); the call being started fails or falls back to child_process.
    def popen(server, argv, **kw):
        if r == e:
            return subprocess.Popen(argv, **kw)
        gid, other = (rg, eg) if server else (eg, rg)
        os.setresgid(gid, gid, other)
        try:
            os.setresuid(e, e, r)
            try:
                return subprocess.Popen(argv, **kw)
            finally:
                os.setresuid(r, e, r)
        finally:
            os.setresgid(rg, eg, rg)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children = {}  # pid -> (id, Popen)
    held = {}  # id -> (fds, names) kept until sandboxd says it has opened the FIFOs

    def send(msg):
        data = (json.dumps(msg) + '\n').encode()
        while data:
            data = data[os.write(1, data):]

    def close_all(fds):
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass

    def unlink_all(names):
        for name in names:
            try:
                os.unlink(name)
            except OSError:
                pass

    def fifo(fds, names, mode):
        # A FIFO under a random name; we hold it O_RDWR, the command gets its own end.
        name = os.path.join(box, secrets.token_hex(16))
        os.mkfifo(name, 0o600)
        names.append(name)
        fds.append(os.open(name, os.O_RDWR | os.O_CLOEXEC))
        end = os.open(name, mode | os.O_CLOEXEC)
        fds.append(end)
        return name, end

    def spawn(m):
        rid = int(m['id'])
        send({'t': 'got', 'id': rid})
        fds, names, ends = [], [], []
        try:
            if m.get('stdin'):
                in_name, in_r = fifo(fds, names, os.O_RDONLY)
            else:
                in_name = ''
                in_r, in_w = os.pipe()  # no writer: the command reads EOF at once
                os.close(in_w)
                fds.append(in_r)
            out_name, out_w = fifo(fds, names, os.O_WRONLY)
            err_name, err_w = fifo(fds, names, os.O_WRONLY)
            ends = [in_r, out_w, err_w]
            env = {b(k): b(v) for k, v in m['env']}
            exe = b(m['exe']) if m.get('exe') else None
            p = popen(m.get('server') is True, [b(a) for a in m['argv']], executable=exe,
                      cwd=b(m['cwd']), env=env, stdin=in_r, stdout=out_w, stderr=err_w,
                      start_new_session=True, close_fds=True)
        except Exception as e:
            close_all(fds)
            unlink_all(names)
            code = errno.errorcode.get(getattr(e, 'errno', None) or 0, 'ESPAWN')
            where = getattr(e, 'filename', None)
            text = getattr(e, 'strerror', None) or str(e)
            if isinstance(where, (bytes, str)):
                text += ': ' + os.fsdecode(where)
            send({'t': 'error', 'id': rid, 'code': code, 'message': text})
            return
        close_all(ends)
        held[rid] = ([fd for fd in fds if fd not in ends], names)
        children[p.pid] = (rid, p)
        send({'t': 'spawned', 'id': rid, 'pid': p.pid, 'fifos': [in_name, out_name, err_name]})

    def release(rid):
        fds, names = held.pop(rid, ([], []))
        close_all(fds)
        unlink_all(names)

    def reap():
        for pid, (rid, p) in list(children.items()):
            rc = p.poll()
            if rc is None:
                continue
            del children[pid]
            sig = None
            if rc < 0:
                try:
                    sig = signal.Signals(-rc).name
                except ValueError:
                    sig = 'SIG%d' % -rc
            send({'t': 'exit', 'id': rid, 'code': None if rc < 0 else rc, 'signal': sig})

    probe = os.path.join(box, secrets.token_hex(16))
    os.mkfifo(probe, 0o600)
    probe_fd = os.open(probe, os.O_RDWR | os.O_CLOEXEC)
    os.write(probe_fd, b'ok')
    held[0] = ([probe_fd], [probe])
    send({'t': 'ready', 'pid': os.getpid(), 'probe': probe})
    buf = b''
    try:
        while True:
            ready = select.select([0, wake_r], [], [])[0]
            if wake_r in ready:
                try:
                    while os.read(wake_r, 512):
                        pass
                except BlockingIOError:
                    pass
                reap()
            if 0 not in ready:
                continue
            data = os.read(0, 65536)
            if not data:
                break
            buf += data
            *lines, buf = buf.split(b'\n')
            if len(buf) > 1 << 24:
                buf = b''  # no request is that long: drop it
            for line in lines:
                try:
                    m = json.loads(line)
                    if m['t'] == 'spawn':
                        spawn(m)
                    elif m['t'] == 'release':
                        release(m['id'])
                except (ValueError, KeyError, TypeError):
                    continue  # not a request of ours
            reap()
    finally:
        for rid in list(held):
            release(rid)
        for pid in children:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass

try:
    main()
except (BrokenPipeError, KeyboardInterrupt):
    pass
`;
