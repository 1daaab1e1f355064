// The state of a terminal (a PTY in the sandbox) as sandboxd reports it: termOpen, termList,
// termResize, termSignal and termClose answer with it, termRead with it and the output. Shared by
// sandboxd, which builds it, and the host, whose SandboxTerminals port returns it (the host checks
// every answer against its schema, host/sandbox/sandboxd/schemas.ts, before using it).

export interface TerminalInfo {
  id: string;
  /** Set at open; a running terminal's name is unique in its sandbox. */
  name: string | null;
  /** The program and its arguments (default ['bash']). */
  command: string[];
  cwd: string;
  cols: number;
  rows: number;
  /** The program's pid inside the sandbox (null before it started). */
  pid: number | null;
  status: 'running' | 'exited';
  /** null while running, or when the program died from a signal (see `signal`). */
  exitCode: number | null;
  signal: string | null;
  startedAt: number;
  endedAt: number | null;
  /** Absolute offset of the oldest output byte still buffered (earlier bytes were dropped). */
  startOffset: number;
  /** Absolute offset just past the newest output byte. */
  endOffset: number;
  /** A job other than the program itself holds the foreground (for a shell: a command is running). */
  busy: boolean;
}
