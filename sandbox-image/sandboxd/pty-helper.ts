// The PTY helper: a small python3 program (the image has python3; Node 18 has no PTY API and native
// modules are not an option) that forks a program on a new pseudo-terminal and relays bytes:
//   fd 0 → the terminal's input, the terminal's output → fd 1,
//   fd 3: control lines from sandboxd: `resize ROWS COLS`, `signal NUM` (to the terminal's
//         foreground process group), `hangup` (SIGHUP to the program's process group, then exit),
//   fd 2: status lines for sandboxd: `pid N` once the program runs, `status S` when it ended
//         (S = os.waitstatus_to_exitcode: the exit code, or minus the signal number).
// Invariants: input is written to the terminal without ever blocking the output relay (a program
// that does not read its input cannot stall its own output); EOF on fd 0 means sandboxd is gone,
// and hangs the terminal up; the helper exits shortly after the program does, even when a
// background process still holds the terminal open; the first size is set before the program
// exists, so a resize that follows the open at once is never undone.
// Identity (identity.ts): the helper keeps real/saved uid 0 so that the agent cannot signal or
// trace it (PYTHON_PRELUDE); the program gets all three of the agent's ids from sandboxd, which
// runs it through setpriv with the ids named (terminal-process.ts, identity.ts asAgent). They are
// not derived from the helper's own effective ids: gVisor's execve (runsc release 20221219) resets
// the effective and saved ids of a process whose real uid is 0 to the real ones, so under gVisor
// the helper runs as uid 0 (gid the servers') and a program given the helper's effective ids ran
// as root with CAP_SETUID and CAP_SETGID. Under runc the child also takes all three of its
// effective ids itself before the exec (as it always did); under gVisor that step finds nothing to
// do and setpriv alone drops to the agent.
// Run as `python3 -c PTY_HELPER ROWS COLS ECHO(0|1) PROGRAM ARGS…`.

import { PYTHON_PRELUDE } from './identity.ts';

export const PTY_HELPER = String.raw`${PYTHON_PRELUDE}
import os, sys, select, signal, struct, fcntl, termios, errno
rows, cols, echo = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == '1'
argv = sys.argv[4:]
os.set_inheritable(3, False)  # the program must not hold the control pipe (nor keep it open)
# The first size and echo are set here, before the fork: set in the child, they could land after
# a resize this process had already applied (a busy machine runs the child late), and undo it.
master, slave = os.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
if not echo:
    a = termios.tcgetattr(slave)
    a[3] &= ~termios.ECHO
    termios.tcsetattr(slave, termios.TCSANOW, a)
pid = os.fork()
if pid == 0:
    try:
        os.close(master)
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
        for fd in (0, 1, 2):
            os.dup2(slave, fd)
        os.close(slave)
        _r, _e, _s = os.getresuid()
        if _r != _e:
            _g = os.getegid()
            os.setresgid(_g, _g, _g)
            os.setresuid(_e, _e, _e)
        os.execvp(argv[0], argv)
    except BaseException as e:
        os.write(2, ('cannot start %s: %s\r\n' % (argv[0], e)).encode())
    os._exit(127)
os.close(slave)

def status(line):
    try:
        os.write(2, (line + '\n').encode())
    except OSError:
        pass

def write_all(fd, data):
    while data:
        try:
            n = os.write(fd, data)
        except InterruptedError:
            continue
        data = data[n:]

status('pid %d' % pid)
wake_r, wake_w = os.pipe()
os.set_blocking(wake_r, False)
os.set_blocking(wake_w, False)
signal.set_wakeup_fd(wake_w)
signal.signal(signal.SIGCHLD, lambda *a: None)
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
os.set_blocking(master, False)
pending = b''
ctl = b''
input_open = True
ctl_open = True
ended = None
quiet = 0

def reap():
    global ended
    if ended is not None:
        return
    try:
        p, st = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        ended = 0
        return
    if p == pid:
        ended = os.waitstatus_to_exitcode(st)

def hangup():
    try:
        os.killpg(pid, signal.SIGHUP)
    except OSError:
        pass

def control(line):
    parts = line.split()
    try:
        if parts[0] == 'resize':
            fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack('HHHH', int(parts[1]), int(parts[2]), 0, 0))
        elif parts[0] == 'signal':
            try:
                group = os.tcgetpgrp(master)
            except OSError:
                group = pid
            os.killpg(group if group > 0 else pid, int(parts[1]))
        elif parts[0] == 'hangup':
            hangup()
    except (OSError, ValueError, IndexError):
        pass

while True:
    rl = [master, wake_r]
    if input_open and len(pending) < 1 << 20:
        rl.append(0)
    if ctl_open:
        rl.append(3)
    wl = [master] if pending else []
    rr, ww, _ = select.select(rl, wl, [], 1.0 if ended is None else 0.1)
    if wake_r in rr:
        try:
            while os.read(wake_r, 512):
                pass
        except BlockingIOError:
            pass
    reap()
    if master in rr:
        try:
            data = os.read(master, 65536)
        except BlockingIOError:
            data = None
        except OSError:
            data = b''
        if data == b'':
            break
        if data:
            write_all(1, data)
            quiet = 0
    elif ended is not None:
        quiet += 1
        if quiet >= 2:
            break
    if 0 in rr:
        data = os.read(0, 65536)
        if data:
            pending += data
        else:
            input_open = False
            hangup()
    if 3 in rr:
        data = os.read(3, 4096)
        if not data:
            ctl_open = False
        ctl += data
        while b'\n' in ctl:
            line, ctl = ctl.split(b'\n', 1)
            control(line.decode('ascii', 'replace'))
        ctl = ctl[-4096:]
    if master in ww and pending:
        try:
            n = os.write(master, pending[:65536])
            pending = pending[n:]
        except BlockingIOError:
            pass
        except OSError:
            pending = b''

if ended is None:
    hangup()
    for _ in range(20):
        reap()
        if ended is not None:
            break
        select.select([wake_r], [], [], 0.05)
if ended is None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        ended = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    except ChildProcessError:
        ended = -9
status('status %d' % ended)
os._exit(0)
`;
