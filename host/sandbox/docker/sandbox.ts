// The Sandbox handle of a docker-backed agent: a thin façade whose every call goes through the
// agent's live sandboxd session, (re)opened on demand. A container the idle reaper stopped is
// restarted by the next call, so a handle stays valid for the sandbox's whole life.

import { SandboxError } from '../../errors.ts';
import type {
  Sandbox,
  SandboxFs,
  SandboxJobs,
  SandboxStdio,
  SandboxTerminals,
  StdioEnd,
  StdioProgram,
} from '../types.ts';
import { createContainerArchive } from './archive.ts';
import type { SandboxdSession } from './session.ts';

export interface HandleOptions {
  id: string;
  agentId: string;
  resolve: (path: string) => string;
  root: string;
  /**
   * Run one call on the live session, reopened when needed. The provider counts calls in flight
   * and marks the agent as used, so the idle reaper never stops a sandbox mid-call.
   */
  use: <T>(fn: (session: SandboxdSession) => Promise<T>) => Promise<T>;
  detach: () => Promise<void>;
  /** Where archive uploads are spooled while they are checked. Default os.tmpdir(). */
  spoolDir?: string;
}

type FsMethod = Exclude<keyof SandboxFs, 'root' | 'resolve'>;
/** Every method of SandboxFs (a missing one fails the type check). */
const FS_METHODS = Object.keys({
  readFile: true,
  readWithStat: true,
  writeFile: true,
  stat: true,
  exists: true,
  list: true,
  mkdir: true,
  remove: true,
  rename: true,
  glob: true,
  grep: true,
} satisfies Record<FsMethod, true>) as FsMethod[];
const JOB_METHODS: Array<keyof SandboxJobs> = ['start', 'list', 'output', 'kill'];
const TERMINAL_METHODS: Array<keyof SandboxTerminals> = [
  'open',
  'list',
  'write',
  'read',
  'resize',
  'signal',
  'close',
  'attach',
];

export const createSandboxHandle = (o: HandleOptions): Sandbox => {
  const fs = { root: o.root, resolve: o.resolve } as Record<string, unknown>;
  // Paths are confined once on this side, by the session's sandboxd client, before anything is sent.
  for (const m of FS_METHODS) {
    fs[m] = async (...args: unknown[]) =>
      o.use((s) => (s.fs[m] as (...a: unknown[]) => Promise<unknown>)(...args));
  }
  const jobs = {} as Record<string, unknown>;
  for (const m of JOB_METHODS) {
    jobs[m] = async (...args: unknown[]) => {
      return o.use((s) => (s.jobs[m] as (...a: unknown[]) => Promise<unknown>)(...args));
    };
  }
  // An attach holds its call open (and so keeps the reaper away) while a person is attached.
  const terminals = {} as Record<string, unknown>;
  for (const m of TERMINAL_METHODS) {
    terminals[m] = async (...args: unknown[]) => {
      if (m === 'open') {
        const cwd = (args[0] as { cwd?: string } | undefined)?.cwd;
        if (cwd !== undefined) o.resolve(cwd);
      }
      return o.use((s) => {
        if (!s.terminals)
          throw new SandboxError('SANDBOX_UNAVAILABLE', 'This sandbox session has no terminals.');
        return (s.terminals[m] as (...a: unknown[]) => Promise<unknown>)(...args);
      });
    };
  }
  // A program on pipes holds its call (and so keeps the reaper away) for as long as it runs.
  const stdio: SandboxStdio = {
    open(options) {
      if (options.cwd !== undefined) o.resolve(options.cwd);
      let started: (program: StdioProgram) => void = () => {};
      const program = new Promise<StdioProgram>((resolve) => {
        started = resolve;
      });
      const ended = o
        .use((s) => {
          if (!s.stdio)
            throw new SandboxError('SANDBOX_UNAVAILABLE', 'This sandbox session has no stdio programs.');
          const p = s.stdio.open(options);
          started(p);
          return p.ended;
        })
        .catch(
          (e: unknown): StdioEnd => ({
            exitCode: null,
            signal: null,
            error:
              e instanceof SandboxError
                ? { code: e.code, message: e.message }
                : { code: 'SANDBOX_UNAVAILABLE', message: String(e) },
          }),
        );
      const never = ended.then(() => {
        throw new SandboxError('CONFLICT', 'The program has ended; its input is closed.');
      });
      never.catch(() => {});
      return {
        ended,
        write: async (data) => (await Promise.race([program, never])).write(data),
      };
    },
  };
  const sandboxFs = fs as unknown as SandboxFs;
  return {
    id: o.id,
    agentId: o.agentId,
    fs: sandboxFs,
    jobs: jobs as unknown as SandboxJobs,
    terminals: terminals as unknown as SandboxTerminals,
    stdio,
    archive: createContainerArchive({
      use: o.use,
      resolve: o.resolve,
      ...(o.spoolDir === undefined ? {} : { spoolDir: o.spoolDir }),
    }),
    exec: async (command, options) => {
      if (options?.cwd !== undefined) o.resolve(options.cwd);
      return o.use((s) => s.exec(command, options));
    },
    detach: o.detach,
  };
};
