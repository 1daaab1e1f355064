// `terminal_*` (seed 000, creator preset): persistent terminals the model opens, types into, reads,
// signals and closes. A terminal lives in the sandbox (it outlives the call, the batch and a
// control-plane restart); its output is a 1 MiB buffer read by absolute offsets. People can attach
// to the same terminal over the WebSocket API. list and read are concurrency-safe; the rest are
// exclusive (they change what runs in the sandbox).

import * as v from 'valibot';
import { SandboxError } from '../../errors.ts';
import type { SandboxTerminals, TerminalInfo } from '../../sandbox/types.ts';
import { backstopTimeout, defineTool } from '../define.ts';
import type { ExecContext, ToolDefinition } from '../types.ts';
import { toWhole } from '../whole-number.ts';
import { terminalsOf } from './persistent-bash.ts';
import { LIMITS, sandboxOf } from './services.ts';
import { capMiddle, cleanTerminalText } from './terminal-text.ts';

/** What `type` may name, and the program each one starts. */
const TYPES: Record<string, string[]> = {
  bash: ['bash'],
  sh: ['sh'],
  python: ['python3'],
  python3: ['python3'],
  node: ['node'],
};
const DEFAULT_READ = 32 * 1024;
const MAX_READ = 256 * 1024;
/** terminal_send without run_in_background waits for output to go quiet this long … */
const QUIET_MS = 500;
/** … but no longer than this in all. */
const SEND_WAIT_MS = 15_000;

const terms = async (exec: ExecContext): Promise<SandboxTerminals> => terminalsOf(await sandboxOf(exec));
const sessionId = v.pipe(v.string(), v.minLength(1), v.description('The id terminal_open returned'));

const Session = v.object({
  sessionId: v.string(),
  name: v.nullable(v.string()),
  type: v.string(),
  cwd: v.string(),
  status: v.picklist(['running', 'exited']),
  exitCode: v.nullable(v.number()),
  busy: v.boolean(),
});
type SessionView = v.InferOutput<typeof Session>;
const view = (t: TerminalInfo): SessionView => ({
  sessionId: t.id,
  name: t.name,
  type: t.command.join(' '),
  cwd: t.cwd,
  status: t.status,
  exitCode: t.exitCode,
  busy: t.busy,
});
const describe = (s: SessionView): string =>
  `${s.sessionId}${s.name ? ` (${s.name})` : ''}  ${s.type}  ${s.status === 'running' ? (s.busy ? 'running a command' : 'idle') : `exited${s.exitCode === null ? '' : ` (${s.exitCode})`}`}  ${s.cwd}`;

const Output = v.object({
  ...Session.entries,
  output: v.string(),
  offset: v.number(),
  nextOffset: v.number(),
  dropped: v.number(),
  more: v.boolean(),
});
type OutputView = v.InferOutput<typeof Output>;
const renderOutput = (o: OutputView, empty: string): string => {
  const lines: string[] = [];
  if (o.dropped > 0) lines.push(`[${o.dropped} earlier bytes were dropped from the terminal buffer]`);
  lines.push(o.output === '' ? empty : capMiddle(o.output, LIMITS.bashOutput));
  if (o.more) lines.push(`[more output buffered: terminal_read with offset ${o.nextOffset}]`);
  if (o.status === 'exited')
    lines.push(`[the terminal's program exited${o.exitCode === null ? '' : ` with code ${o.exitCode}`}]`);
  return lines.join('\n');
};

export const terminalListTool = defineTool({
  name: 'terminal_list',
  description: 'List persistent terminal sessions with their status.',
  parameters: v.object({}),
  output: {
    schema: v.array(Session),
    render: (_a, value) => [
      { type: 'text', text: value.length === 0 ? 'No terminals' : value.map(describe).join('\n') },
    ],
  },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  async execute(_args, exec) {
    return (await (await terms(exec)).list()).map(view);
  },
});

export const terminalOpenTool = defineTool({
  name: 'terminal_open',
  description: `Open a persistent terminal: a program on its own PTY that keeps running between calls (dev servers, REPLs, long builds). type: ${Object.keys(TYPES).join(', ')}. Returns its sessionId for terminal_send / terminal_read.`,
  parameters: v.object({
    type: v.pipe(v.string(), v.description(`What runs in it: ${Object.keys(TYPES).join(', ')}`)),
    name: v.optional(v.pipe(v.string(), v.description('A name to recognise it by (letters, digits, . _ -)'))),
    cwd: v.optional(v.pipe(v.string(), v.description('Working directory (default: the workspace)'))),
  }),
  output: {
    schema: Session,
    render: (_a, value) => [{ type: 'text', text: `Opened terminal ${describe(value)}` }],
  },
  async execute(args, exec) {
    const command = TYPES[args.type];
    if (command === undefined)
      throw new SandboxError(
        'INVALID_ARGUMENTS',
        `Unknown terminal type ${JSON.stringify(args.type)}; use one of ${Object.keys(TYPES).join(', ')}.`,
      );
    const t = await (await terms(exec)).open({
      command,
      cols: 120,
      rows: 40,
      ...(args.name === undefined ? {} : { name: args.name }),
      ...(args.cwd === undefined ? {} : { cwd: args.cwd }),
    });
    return view(t);
  },
});

export const terminalReadTool = defineTool({
  name: 'terminal_read',
  description: `Read buffered terminal output. Without offset, continues where the previous read ended; offsets are absolute byte positions (each result gives nextOffset). count: at most this many bytes (default ${DEFAULT_READ}).`,
  parameters: v.object({
    sessionId,
    offset: v.optional(
      v.pipe(v.number(), toWhole, v.minValue(0), v.description('Absolute byte offset to read from')),
    ),
    count: v.optional(
      v.pipe(
        v.number(),
        toWhole,
        v.minValue(1),
        v.maxValue(MAX_READ),
        v.description('At most this many bytes'),
      ),
    ),
  }),
  output: {
    schema: Output,
    render: (_a, value) => [{ type: 'text', text: renderOutput(value, '(no new output)') }],
  },
  isConcurrencySafe: () => true,
  isReadOnly: () => true,
  async execute(args, exec) {
    const r = await (await terms(exec)).read(args.sessionId, {
      ...(args.offset === undefined ? {} : { offset: args.offset }),
      count: args.count ?? DEFAULT_READ,
    });
    return {
      ...view(r),
      output: cleanTerminalText(r.data.toString('utf8')),
      offset: r.offset,
      nextOffset: r.nextOffset,
      dropped: r.dropped,
      more: r.nextOffset < r.endOffset,
    };
  },
});

export const terminalSendTool = defineTool({
  name: 'terminal_send',
  description:
    'Send text to a terminal; submit: true presses Enter after it. Waits for the output to settle (up to 15 s) and returns it, unless run_in_background: true (then returns at once; read later with terminal_read). Control keys as escapes, e.g. "\\u0003" is Ctrl-C.',
  parameters: v.object({
    sessionId,
    text: v.pipe(v.string(), v.maxLength(1024 * 1024), v.description('The text (keystrokes) to send')),
    submit: v.optional(v.pipe(v.boolean(), v.description('Press Enter after the text'))),
    run_in_background: v.optional(v.pipe(v.boolean(), v.description('Do not wait for output'))),
  }),
  output: {
    schema: Output,
    render: (args, value) => [
      {
        type: 'text',
        text: args.run_in_background
          ? `Sent to ${value.sessionId}; read its output with terminal_read (offset ${value.offset}).`
          : renderOutput(value, '(no output yet; read later with terminal_read)'),
      },
    ],
  },
  // Waits for quiet output at most SEND_WAIT_MS; a sandbox that never answers still ends the call.
  timeoutMs: backstopTimeout(SEND_WAIT_MS),
  async execute(args, exec) {
    const t = await terms(exec);
    const before = (await t.list()).find((x) => x.id === args.sessionId);
    if (before === undefined)
      throw new SandboxError(
        'TERMINAL_NOT_FOUND',
        `No terminal ${args.sessionId}; terminal_list shows them.`,
      );
    await t.write(args.sessionId, args.submit ? `${args.text}\r` : args.text);
    const start = before.endOffset;
    if (args.run_in_background)
      return { ...view(before), output: '', offset: start, nextOffset: start, dropped: 0, more: false };
    let offset = start;
    let dropped = 0;
    const chunks: Buffer[] = [];
    let size = 0;
    let last = before as TerminalInfo;
    for (const end = Date.now() + SEND_WAIT_MS; Date.now() < end && !exec.signal.aborted; ) {
      const r = await t.read(args.sessionId, { offset, count: MAX_READ, waitMs: QUIET_MS });
      last = r;
      dropped += r.dropped;
      offset = r.nextOffset;
      if (size < MAX_READ) chunks.push(r.data);
      size += r.data.length;
      // Quiet for QUIET_MS after some output (or a shell back at its prompt): the answer is in.
      const settled = r.data.length === 0 && (size > 0 || !r.busy);
      if (settled || r.status !== 'running') break;
    }
    return {
      ...view(last),
      output: cleanTerminalText(Buffer.concat(chunks).toString('utf8')),
      offset: start,
      nextOffset: offset,
      dropped,
      more: offset < last.endOffset,
    };
  },
});

export const terminalSignalTool = defineTool({
  name: 'terminal_signal',
  description: "Send a signal to the terminal's foreground process (SIGINT = Ctrl-C, SIGTSTP = Ctrl-Z).",
  parameters: v.object({
    sessionId,
    signal: v.pipe(
      v.picklist(['SIGINT', 'SIGTERM', 'SIGKILL', 'SIGTSTP', 'SIGHUP']),
      v.description('The signal'),
    ),
  }),
  output: {
    schema: Session,
    render: (args, value) => [{ type: 'text', text: `Sent ${args.signal} to ${describe(value)}` }],
  },
  async execute(args, exec) {
    return view(await (await terms(exec)).signal(args.sessionId, args.signal));
  },
});

export const terminalCloseTool = defineTool({
  name: 'terminal_close',
  description: 'Close a terminal: its program and everything started in it are stopped.',
  parameters: v.object({ sessionId }),
  output: {
    schema: Session,
    render: (_a, value) => [{ type: 'text', text: `Closed terminal ${value.sessionId}` }],
  },
  async execute(args, exec) {
    return view(await (await terms(exec)).close(args.sessionId));
  },
});

/** The terminal_* tools, in catalog order. */
export const terminalTools = (): ToolDefinition[] => [
  terminalListTool,
  terminalOpenTool,
  terminalReadTool,
  terminalSendTool,
  terminalSignalTool,
  terminalCloseTool,
];
