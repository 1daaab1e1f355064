// A SandboxTerminals double for the tool fuzz: every terminal "program" prints back what it is sent
// (as `cat` on a PTY would), so hostile model input becomes hostile terminal output that the host's
// terminal tools must clean and cut. The persistent `bash` tool's framing is answered too: its
// base64 command comes back between the start and end markers, as if the shell had run `printf`
// of it. Output is a 1 MiB ring addressed by absolute offsets, as the SandboxTerminals port says.
// Test-only: nothing here runs a real program.

import { SandboxError } from '../../../host/errors.ts';
import type {
  SandboxTerminals,
  TerminalInfo,
  TerminalOpenOptions,
  TerminalRead,
} from '../../../host/sandbox/types.ts';

const RING = 1024 * 1024;

interface Term {
  info: TerminalInfo;
  data: Buffer;
  echo: boolean;
}

/** The reply of a shell to the persistent bash tool's script, or undefined for other input. */
const shellReply = (text: string): string | undefined => {
  const nonce = /printf '__DSH_%s_START__\\n' ([0-9a-f]+);/.exec(text)?.[1];
  if (nonce === undefined) return undefined;
  let b64 = '';
  for (const m of text.matchAll(/__dsh_c\+='([A-Za-z0-9+/=]*)'/g)) b64 += m[1];
  const command = Buffer.from(b64, 'base64').toString('utf8');
  return `__DSH_${nonce}_START__\n${command}\n__DSH_${nonce}_END_0__\n`;
};

export const createEchoTerminals = (): SandboxTerminals => {
  const terms = new Map<string, Term>();
  let seq = 0;
  const find = (id: string): Term => {
    const t = terms.get(id);
    if (t === undefined) throw new SandboxError('TERMINAL_NOT_FOUND', `No terminal ${id.slice(0, 80)}.`);
    return t;
  };
  const emit = (t: Term, bytes: Buffer): void => {
    t.data = Buffer.concat([t.data, bytes]);
    t.info.endOffset += bytes.length;
    if (t.data.length > RING) {
      const drop = t.data.length - RING;
      t.data = t.data.subarray(drop);
      t.info.startOffset += drop;
    }
  };
  const snapshot = (t: Term): TerminalInfo => ({ ...t.info });
  return {
    async open(options: TerminalOpenOptions = {}) {
      if (options.name !== undefined) {
        const same = [...terms.values()].find((t) => t.info.name === options.name);
        if (same !== undefined) {
          if (options.reuse) return snapshot(same);
          throw new SandboxError('CONFLICT', `A terminal named ${options.name} is running.`);
        }
      }
      const id = `term-${++seq}`;
      const info: TerminalInfo = {
        id,
        name: options.name ?? null,
        command: options.command ?? ['bash'],
        cwd: '/workspace',
        cols: options.cols ?? 80,
        rows: options.rows ?? 24,
        pid: 1,
        status: 'running',
        exitCode: null,
        signal: null,
        startedAt: Date.now(),
        endedAt: null,
        startOffset: 0,
        endOffset: 0,
        busy: false,
      };
      terms.set(id, { info, data: Buffer.alloc(0), echo: options.echo !== false });
      return { ...info };
    },
    async list() {
      return [...terms.values()].map(snapshot);
    },
    async write(id, data) {
      const t = find(id);
      const text = typeof data === 'string' ? data : Buffer.from(data).toString('utf8');
      const reply = shellReply(text);
      if (reply !== undefined) emit(t, Buffer.from(reply, 'utf8'));
      else if (t.echo) emit(t, Buffer.from(text, 'utf8'));
    },
    async read(id, options = {}): Promise<TerminalRead> {
      const t = find(id);
      const asked = options.offset ?? t.info.startOffset;
      const offset = Math.min(Math.max(asked, t.info.startOffset), t.info.endOffset);
      const count = options.count ?? 64 * 1024;
      const from = offset - t.info.startOffset;
      const data = Buffer.from(t.data.subarray(from, from + count));
      if (data.length === 0 && options.waitMs) await new Promise((r) => setTimeout(r, 2));
      return {
        ...snapshot(t),
        data,
        offset,
        nextOffset: offset + data.length,
        dropped: Math.max(0, offset - asked),
      };
    },
    async resize(id, cols, rows) {
      const t = find(id);
      t.info.cols = cols;
      t.info.rows = rows;
      return snapshot(t);
    },
    async signal(id) {
      return snapshot(find(id));
    },
    async close(id) {
      const t = find(id);
      terms.delete(id);
      return { ...snapshot(t), status: 'exited', exitCode: 0, endedAt: Date.now() };
    },
    async attach(id) {
      return snapshot(find(id));
    },
  };
};
