// The spawner's program: a small python3 loop that sandboxd starts once and asks to start commands,
// because a fork of sandboxd's large Node process costs 10-20 ms and a vfork from python about 1 ms.
// Protocol: one JSON object per line, requests on the spawner's stdin, events on its stdout.
//   → {"t":"spawn","id":N,"argv":[b64..],"cwd":b64,"env":[[b64,b64]..],"stdin":bool}
//   ← {"t":"spawned","id":N,"pid":P,"fds":[stdinW|-1,stdoutR,stderrR]}  or  {"t":"error","id":N,...}
//   → {"t":"release","id":N}  (sandboxd has opened /proc/<spawner>/fd/<fd> for each of fds)
//   ← {"t":"exit","id":N,"code":C|null,"signal":S|null}
//   ← {"t":"ready","pid":P,"probe":[R,W]} once at start: R holds "ok", for sandboxd to check that it
//     can open our pipes through /proc (it then sends {"t":"release","id":0}).
// Until the release, the spawner keeps its own ends of the child's pipes open: that keeps output
// written by a command that ends at once in the pipe, and lets sandboxd open the stdin pipe's write
// end (a pipe with no reader cannot be opened for writing). Strings travel as base64 of their UTF-8
// bytes so that what reaches the command is byte for byte what child_process.spawn would pass.
// The command runs in a session of its own (pid = process group id); sandboxd kills the group.
// When stdin closes (sandboxd is gone) the spawner kills the groups it started and exits.

export const SPAWNER_SCRIPT = String.raw`
import base64, errno, json, os, select, signal, subprocess, sys

def b(s):
    return base64.b64decode(s)

def main():
    try:
        with open('/proc/self/comm', 'w') as f:
            f.write('sandboxd-spawn')
    except OSError:
        pass
    os.chdir('/')
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children = {}  # pid -> (id, Popen)
    held = {}  # id -> fds kept open until sandboxd says it has its own

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

    def spawn(m):
        rid = int(m['id'])
        fds = []
        try:
            in_r, in_w = os.pipe(); fds += [in_r, in_w]
            out_r, out_w = os.pipe(); fds += [out_r, out_w]
            err_r, err_w = os.pipe(); fds += [err_r, err_w]
            env = {b(k): b(v) for k, v in m['env']}
            p = subprocess.Popen([b(a) for a in m['argv']], cwd=b(m['cwd']), env=env, stdin=in_r,
                                 stdout=out_w, stderr=err_w, start_new_session=True, close_fds=True)
        except Exception as e:
            close_all(fds)
            code = errno.errorcode.get(getattr(e, 'errno', None) or 0, 'ESPAWN')
            where = getattr(e, 'filename', None)
            text = getattr(e, 'strerror', None) or str(e)
            if isinstance(where, (bytes, str)):
                text += ': ' + os.fsdecode(where)
            send({'t': 'error', 'id': rid, 'code': code, 'message': text})
            return
        close_all([out_w, err_w])
        if m.get('stdin'):
            held[rid] = [in_r, in_w, out_r, err_r]
        else:
            close_all([in_w])
            in_w = -1
            held[rid] = [in_r, out_r, err_r]
        children[p.pid] = (rid, p)
        send({'t': 'spawned', 'id': rid, 'pid': p.pid, 'fds': [in_w, out_r, err_r]})

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

    probe_r, probe_w = os.pipe()
    os.write(probe_w, b'ok')
    held[0] = [probe_r, probe_w]
    send({'t': 'ready', 'pid': os.getpid(), 'probe': [probe_r, probe_w]})
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
                        close_all(held.pop(m['id'], []))
                except (ValueError, KeyError, TypeError):
                    continue  # not a request of ours
            reap()
    finally:
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
