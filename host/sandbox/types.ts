// Ports of the sandbox: the agent's file system (`ctx.fs`), processes, background jobs and bulk
// transfer. Tools depend only on these interfaces, never on Docker. Every provider (memory, docker)
// runs the one contract suite in tests/contract/sandbox.
// Paths: a relative path resolves against the workspace root; an absolute path must lie inside it.
// A path that leaves the workspace (lexically, after normalisation) fails with PATH_OUTSIDE_WORKSPACE.
// Every method rejects with a SandboxError (host/errors.ts); nothing a sandbox says is trusted.

import type { Readable } from 'node:stream';
import type { TerminalInfo } from '../../sandbox-wire/terminal.ts';
import type { SandboxRuntime } from './runtimes.ts';

export type FileType = 'file' | 'directory' | 'symlink' | 'other';

export interface FileStat {
  /** Normalised absolute path inside the sandbox. */
  path: string;
  type: FileType;
  size: number;
  mtimeMs: number;
  /** Permission bits, e.g. 0o644. */
  mode: number;
}

export interface DirEntry {
  name: string;
  type: FileType;
  size: number;
}

export interface ReadOptions {
  /** Byte offset to start at. Default 0. */
  offset?: number;
  /** At most this many bytes. Default: the provider's maximum (see SandboxLimits.maxReadBytes). */
  length?: number;
}

export interface ReadWithStatOptions extends ReadOptions {
  /**
   * A file with more than this many bytes from `offset` (when no `length` is given) answers with
   * its stat and no bytes. Default, and at most: the provider's maximum (SandboxLimits.maxReadBytes).
   */
  maxBytes?: number;
}

/** What readWithStat found: what it opened and, when it read it, the bytes. */
export interface FileRead {
  /** Of what was opened: the file (for a symlink, the file it leads to) at the path asked for. */
  stat: FileStat;
  /** Absent for a directory, and for a file over `maxBytes`. */
  data?: Buffer;
}

export interface GrepMatch {
  /** Absolute path of the matching file. */
  path: string;
  /** 1-based line number. */
  line: number;
  text: string;
}

export interface GrepOptions {
  /** Directory or file to search. Default: the workspace root. */
  path?: string;
  /** Glob that file names must match, e.g. `*.ts`. */
  include?: string;
  ignoreCase?: boolean;
  /**
   * Skip hidden files and directories (below the searched path) and what `.gitignore` / `.ignore`
   * files in the searched tree exclude, as ripgrep does by default (sandbox-wire/ignore.ts).
   * Default false: every file is searched.
   */
  skipIgnored?: boolean;
  /** At most this many matches. Default 1000. */
  limit?: number;
}

export interface GlobOptions {
  /** Directory the pattern is relative to. Default: the workspace root. */
  cwd?: string;
  /** At most this many paths. Default 1000. */
  limit?: number;
}

/** The agent's file system (`ctx.fs`). */
/** For the writes the service makes on its own in a workspace (host/tools/builtin/skill.ts). */
export interface NoSymlinks {
  /**
   * Refuse (FORBIDDEN) a path with a symlink in any component below the root, even one that stays
   * inside the workspace (RESOLVE_NO_SYMLINKS), without races: a link the agent planted can never
   * redirect the write. Default false: file tools follow links that stay inside the workspace.
   */
  noSymlinks?: boolean;
}

export interface SandboxFs {
  readonly root: string;
  /** Normalise and confine a path; throws PATH_OUTSIDE_WORKSPACE. */
  resolve(path: string): string;
  readFile(path: string, options?: ReadOptions): Promise<Buffer>;
  /**
   * stat and readFile in one round trip, for a caller that decides from the stat whether it wants
   * the bytes: a directory or a file over `maxBytes` answers with its stat alone instead of
   * failing; anything else that is not a regular file fails as readFile does (NOT_A_FILE).
   */
  readWithStat(path: string, options?: ReadWithStatOptions): Promise<FileRead>;
  /** Creates parent directories. Replaces an existing file. */
  writeFile(path: string, data: Uint8Array | string, options?: { mode?: number } & NoSymlinks): Promise<void>;
  stat(path: string): Promise<FileStat>;
  exists(path: string): Promise<boolean>;
  list(path: string): Promise<DirEntry[]>;
  mkdir(path: string, options?: { recursive?: boolean } & NoSymlinks): Promise<void>;
  /** A symlink named by `path` itself is removed, never followed. */
  remove(path: string, options?: { recursive?: boolean } & NoSymlinks): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  /** Matching paths, absolute, sorted, files only. `**` crosses directories. */
  glob(pattern: string, options?: GlobOptions): Promise<{ paths: string[]; truncated: boolean }>;
  /** Regular-expression search (ripgrep syntax where the provider has ripgrep). */
  grep(pattern: string, options?: GrepOptions): Promise<{ matches: GrepMatch[]; truncated: boolean }>;
}

export interface ExecOptions {
  /** Working directory; default the workspace root. */
  cwd?: string;
  env?: Record<string, string>;
  /** Kill the whole process group after this long. Default 120000. */
  timeoutMs?: number;
  stdin?: string;
  signal?: AbortSignal;
  onStdout?: (chunk: Buffer) => void;
  onStderr?: (chunk: Buffer) => void;
}

export interface ExecResult {
  /** null when killed by a signal or timeout. */
  exitCode: number | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** True when stdout or stderr was cut at the provider's output cap. */
  truncated: boolean;
  durationMs: number;
}

export type JobStatus = 'running' | 'exited' | 'killed';

export interface JobInfo {
  id: string;
  command: string;
  cwd: string;
  status: JobStatus;
  exitCode: number | null;
  startedAt: number;
  endedAt: number | null;
}

export interface JobOutput extends JobInfo {
  /** Combined stdout and stderr, from `offset`. */
  output: string;
  /** Byte offset of the output where `output` starts (the asked one, or where a tail starts). */
  offset: number;
  /** Byte offset to pass next time to read only what is new. */
  nextOffset: number;
  truncated: boolean;
}

/** Background jobs: their output goes to files inside the sandbox, so they outlive a control-plane restart. */
export interface SandboxJobs {
  start(command: string, options?: { cwd?: string; env?: Record<string, string> }): Promise<JobInfo>;
  list(): Promise<JobInfo[]>;
  /** With `wait`, resolves when the job ends or after `timeoutMs` (default 30000). */
  output(
    id: string,
    options?: {
      wait?: boolean;
      timeoutMs?: number;
      /** Byte offset to read from. Default 0. */
      offset?: number;
      /** Read the newest output instead: at most this many bytes, up to the end (from a character start). */
      tail?: number;
      signal?: AbortSignal;
    },
  ): Promise<JobOutput>;
  kill(id: string, signal?: 'SIGTERM' | 'SIGKILL' | 'SIGINT'): Promise<JobInfo>;
}

export type TerminalSignal = 'SIGINT' | 'SIGTERM' | 'SIGKILL' | 'SIGTSTP' | 'SIGHUP' | 'SIGQUIT' | 'SIGCONT';

/** A terminal's state as sandboxd reports it (defined with the wire both sides speak). */
export type { TerminalInfo };

export interface TerminalOpenOptions {
  /** Program and arguments. Default ['bash']. */
  command?: string[];
  /** Working directory. Default: the workspace root. */
  cwd?: string;
  env?: Record<string, string>;
  /** Default 80 x 24. */
  cols?: number;
  rows?: number;
  /** 1-64 of [A-Za-z0-9._-]; unique among running terminals. */
  name?: string;
  /** With a name: return the running terminal of that name instead of failing with CONFLICT. */
  reuse?: boolean;
  /** The terminal echoes input. Default true. */
  echo?: boolean;
}

export interface TerminalRead extends TerminalInfo {
  data: Buffer;
  /** Where `data` starts: the asked offset, moved up to startOffset when that was dropped. */
  offset: number;
  /** Pass as the next offset to read only what is new. */
  nextOffset: number;
  /** Bytes between the asked offset and `offset` that the buffer no longer holds. */
  dropped: number;
}

/**
 * Persistent terminals (PTYs) in the sandbox. They live as long as the sandbox, not the host
 * connection: after a control-plane restart `list()` shows them with their buffered output.
 * Output is kept in a bounded ring (1 MiB per terminal) addressed by absolute byte offsets.
 */
export interface SandboxTerminals {
  open(options?: TerminalOpenOptions): Promise<TerminalInfo>;
  list(): Promise<TerminalInfo[]>;
  /** Raw input (keystrokes): a newline is `\r`, Ctrl-C is `\x03`. */
  write(id: string, data: string | Uint8Array): Promise<void>;
  /**
   * Buffered output from `offset` (default: where the previous read without an offset ended), at
   * most `count` bytes (default 64 KiB). With `waitMs`, waits that long for output past `offset`.
   */
  read(
    id: string,
    options?: { offset?: number; count?: number; waitMs?: number; signal?: AbortSignal },
  ): Promise<TerminalRead>;
  resize(id: string, cols: number, rows: number): Promise<TerminalInfo>;
  /** Sends the signal to the terminal's foreground process group. */
  signal(id: string, signal: TerminalSignal): Promise<TerminalInfo>;
  /** Hangs up (SIGHUP, then SIGKILL) and forgets the terminal. */
  close(id: string): Promise<TerminalInfo>;
  /**
   * Live output: replays from `offset` (default: the oldest byte held), then streams until the
   * terminal ends (resolves with its final info) or `signal` aborts (resolves with its info then).
   */
  attach(
    id: string,
    options: { offset?: number; signal?: AbortSignal; onData: (data: Buffer, offset: number) => void },
  ): Promise<TerminalInfo>;
}

export interface StdioOpenOptions {
  /** Program and arguments (no shell). */
  command: string[];
  /** Working directory. Default: the workspace root. */
  cwd?: string;
  env?: Record<string, string>;
  /** Ends the program (SIGKILL to its process group). */
  signal?: AbortSignal;
  /** Its stdout as it comes; untrusted bytes. */
  onStdout: (chunk: Buffer) => void;
  /** Its stderr as it comes (at most 1 MiB over its life); untrusted bytes. */
  onStderr?: (chunk: Buffer) => void;
}

/** A program on pipes in the sandbox, run as the agent; it ends with its host connection. */
export interface StdioProgram {
  /** Writes to its stdin (LIMIT_EXCEEDED when it does not read, CONFLICT once it has ended). */
  write(data: Uint8Array): Promise<void>;
  /** Resolves (never rejects) when it has ended. */
  readonly ended: Promise<StdioEnd>;
}

/** How a program on pipes ended: its exit, or the error that ended it (connection lost, abort). */
export interface StdioEnd {
  /** null when it died from a signal or did not end by itself. */
  exitCode: number | null;
  signal: string | null;
  error?: { code: string; message: string };
}

/**
 * Programs on pipes (stdio MCP servers): started as the agent in the sandbox, their stdin fed and
 * their output streamed over the provider's connection. Unlike jobs they do not outlive it.
 */
export interface SandboxStdio {
  open(options: StdioOpenOptions): StdioProgram;
}

/**
 * Bulk transfer: uncompressed tar (only regular files and directories, paths confined) and single
 * files of any size. Both directions are streamed: no provider holds a whole upload or download in
 * the host's memory (the memory provider, whose files live in memory, excepted).
 */
export interface SandboxArchive {
  /**
   * Extract a tar stream into directory `path`. Rejects hostile archives with ARCHIVE_REJECTED and
   * content over `maxBytes` with FILE_TOO_LARGE, having checked the whole archive before writing.
   */
  upload(
    path: string,
    tar: Readable,
    options?: {
      maxBytes?: number;
      /**
       * Told the files the archive will write (absolute, confined), once it was checked in full
       * and before anything is written (checkpoints keep their pre-images); a rejection stops the
       * upload with nothing written.
       */
      beforeWrite?: (files: string[]) => Promise<void>;
    },
  ): Promise<{ files: number; bytes: number }>;
  /**
   * Write one file from a stream of bytes. The old file is replaced only once all bytes arrived (a
   * failed or aborted upload leaves it as it was); past `maxBytes` it fails with FILE_TOO_LARGE.
   * Keeps an existing file's mode (0o644 for a new one). Resolves with the confined path.
   */
  uploadFile(
    path: string,
    data: AsyncIterable<Uint8Array>,
    options?: { maxBytes?: number },
  ): Promise<{ path: string; bytes: number }>;
  /**
   * A tar stream of `path` (file or directory), its content read piece by piece only as the stream
   * is consumed. A file that shrinks meanwhile is padded with zeros (as tar does); one that grows is
   * cut at the size it had when listed.
   */
  download(path: string): Promise<Readable>;
  /**
   * One regular file's bytes, read piece by piece only as `content` is consumed (stop consuming and
   * the reads stop). `size` is the file's size when the download began; `content` yields exactly
   * that many bytes (a file that grew is cut) or fails when the file shrank meanwhile, never ending
   * early. Fails up front with FILE_NOT_FOUND, NOT_A_FILE, PATH_OUTSIDE_WORKSPACE, or
   * FILE_TOO_LARGE past the provider's download limit (1 GiB by default).
   */
  downloadFile(path: string): Promise<{ path: string; size: number; content: AsyncIterable<Buffer> }>;
}

export interface SandboxLimits {
  memoryBytes: number;
  nanoCpus: number;
  pids: number;
  maxReadBytes: number;
  maxOutputBytes: number;
  /** Size of the workspace file system; enforced where the provider can (docker with loop workspaces). */
  diskBytes?: number;
}

/** One agent's sandbox. */
export interface Sandbox {
  readonly id: string;
  readonly agentId: string;
  readonly fs: SandboxFs;
  readonly jobs: SandboxJobs;
  readonly archive: SandboxArchive;
  exec(command: string, options?: ExecOptions): Promise<ExecResult>;
  /** Persistent terminals; present when the provider's `flags.terminals` is true. */
  readonly terminals?: SandboxTerminals;
  /** Programs on pipes; present when the provider's `flags.stdio` is true. */
  readonly stdio?: SandboxStdio;
  /** Releases host-side resources (streams); the sandbox itself keeps running. */
  detach(): Promise<void>;
}

export interface SandboxSpec {
  tenantId: string;
  agentId: string;
  limits?: Partial<SandboxLimits>;
  /**
   * The container runtime (./runtimes.ts). Default DEFAULT_RUNTIME. One the provider does not
   * offer (runtimes()) fails with RUNTIME_UNAVAILABLE.
   */
  runtime?: SandboxRuntime;
  /** The agent whose workspace this one starts from: where nodes are several, it lands beside it. */
  near?: string;
  /**
   * A snapshot (SandboxProvider.snapshot) the workspace starts as a copy of; `limits.diskBytes`
   * must be its size. A provider without snapshots refuses it (SNAPSHOT_UNSUPPORTED).
   */
  fromSnapshot?: string;
  /** The node that holds `fromSnapshot` (WorkspaceSnapshot.node): where nodes are several, the agent goes there. */
  snapshotNode?: string;
  /** The agent's first sandbox (it never had one): where nodes are several, no node is asked whether it holds it. */
  fresh?: boolean;
}

/** A snapshot a provider took of an agent's workspace. */
export interface WorkspaceSnapshot {
  /** The node whose disk holds it. */
  node: string;
  /** The workspace's size limit: an agent made from it gets that limit. */
  sizeBytes: number;
  /** The host disk it takes (a sparse copy). */
  bytes: number;
}

/** Optional capabilities, declared as data. */
export interface ProviderFlags {
  /** Jobs survive a control-plane restart. */
  durableJobs: boolean;
  /** Real process isolation (false for the memory provider: never for untrusted work). */
  isolated: boolean;
  terminals: boolean;
  /** Programs on pipes (stdio MCP servers) run in the sandbox. */
  stdio: boolean;
}

/** Bytes used of a bound (a workspace's file system, a container's memory). */
export interface UsedOf {
  usedBytes: number;
  limitBytes: number;
}

/** What an agent's sandbox uses now, as its provider measures it; each part only where it can. */
export interface SandboxUsage {
  /** The workspace file system; absent where workspaces have no size limit (volumes, memory without diskBytes). */
  disk?: UsedOf;
  /** Memory of the container (page cache left out), with `stats` only. */
  memory?: UsedOf;
  /** CPU over about the last second, 100 = one whole CPU, with `stats` only. */
  cpuPercent?: number;
}

export interface SandboxUsageOptions {
  /** Also memory and CPU (Docker stats: about a second). Default false: the disk alone. */
  stats?: boolean;
  /** Memory and CPU are left out when they take longer than this. Default 3000 ms. */
  statsTimeoutMs?: number;
}

export interface SandboxProvider {
  readonly name: string;
  readonly flags: ProviderFlags;
  /** The most a spec may ask for; create() refuses more with LIMIT_EXCEEDED. Absent: no maxima. */
  readonly maxima?: SandboxLimits;
  /** Creates (or takes from the warm pool) the agent's sandbox. */
  create(spec: SandboxSpec): Promise<Sandbox>;
  /** Re-attaches to an existing sandbox of this agent; undefined when there is none. */
  get(agentId: string): Promise<Sandbox | undefined>;
  /** Removes the agent's sandbox and everything in it. */
  destroy(agentId: string): Promise<void>;
  /** Stops background work (pool, reaper) and detaches; sandboxes stay for re-adoption. */
  close(): Promise<void>;
  /**
   * What the agent's sandbox uses now, without starting or adopting it; undefined when it has none.
   * Optional: a provider without it reports no usage.
   */
  usage?(agentId: string, options?: SandboxUsageOptions): Promise<SandboxUsage | undefined>;
  /**
   * The node holding the agent's sandbox when that node is known not to answer now (memory only,
   * cheap in lists); undefined otherwise. Optional: a provider on one engine has none.
   */
  unreachable?(agentId: string): string | undefined;
  /**
   * Pauses the agent's sandbox, its workspace kept: `stop` stops it (no CPU, no memory held;
   * processes, /tmp, terminals and jobs end), `freeze` freezes its processes in place (no CPU, memory
   * kept). Resolves to what was done: `stop` when a freeze found the sandbox not running, `none`
   * when the agent has no sandbox. AGENT_BUSY while one of its calls is in flight. The next use
   * starts (or thaws) it. Optional: a provider without it cannot pause.
   */
  pause?(agentId: string, mode: PauseMode): Promise<PauseMode | 'none'>;
  /** Starts (or thaws) a paused sandbox and waits until it answers. Optional, with pause(). */
  resume?(agentId: string): Promise<void>;
  /**
   * Copies the agent's workspace (its sandbox made first when it has none) into the snapshot `id`,
   * consistent: the workspace's writes are held while the copy is made. Optional: a provider
   * without it has no snapshots (SNAPSHOT_UNSUPPORTED).
   */
  snapshot?(agentId: string, id: string): Promise<WorkspaceSnapshot>;
  /** Deletes a snapshot on the node that holds it (gone already: done). With snapshot(). */
  dropSnapshot?(id: string, node: string): Promise<void>;
  /**
   * Lets the provider's idle sweep pause the agents of tenants that ask for it (`afterMs`: the
   * tenant's idle time, undefined when it sets none), through `pause` (the agent service's, which
   * records the pause). Optional, with pause(); set once by the agent service.
   */
  pauseWhenIdle?(idle: IdlePauses): void;
  /**
   * The runtimes this provider can run a sandbox under (its engine's, read when first asked and
   * again after a failed read). Optional: a provider without it offers DEFAULT_RUNTIME alone.
   */
  runtimes?(): Promise<readonly SandboxRuntime[]>;
}

/** How a sandbox is paused (SandboxProvider.pause). */
export type PauseMode = 'stop' | 'freeze';

/** What the idle sweep asks before it pauses an agent (SandboxProvider.pauseWhenIdle). */
export interface IdlePauses {
  /** How long the tenant's agents may stay idle before they are paused; undefined: not paused. */
  afterMs(tenantId: string): number | undefined;
  pause(agentId: string): Promise<void>;
}
