// The host services the builtin tools use, added to ToolServices by module augmentation so that
// host/tools itself never imports a sandbox implementation. host/agents fills `sandbox` with the
// agent's Sandbox, or with a function that creates it on first use.

import { SandboxError } from '../../errors.ts';
import type { Sandbox } from '../../sandbox/types.ts';
import type { ExecContext } from '../types.ts';

declare module '../types.ts' {
  interface ToolServices {
    sandbox?: Sandbox | (() => Promise<Sandbox>);
  }
}

export const sandboxOf = async (exec: ExecContext): Promise<Sandbox> => {
  const service = exec.agent.services.sandbox as Sandbox | (() => Promise<Sandbox>) | undefined;
  if (!service) {
    throw new SandboxError(
      'SANDBOX_UNAVAILABLE',
      'This agent has no sandbox; create the agent with a sandbox provider.',
    );
  }
  return typeof service === 'function' ? service() : service;
};

/** Cuts text to `max` characters and says so, so the model knows output is missing. */
export const capText = (text: string, max: number, what = 'output'): string => {
  if (text.length <= max) return text;
  const omitted = text.length - max;
  return `${text.slice(0, max)}\n[${what} cut: ${omitted} more characters not shown]`;
};

/** Output limits shared by the builtin tools, in characters. */
export const LIMITS = {
  bashOutput: 30_000,
  readLines: 2000,
  lineChars: 2000,
  readBytes: 10 * 1024 * 1024,
  /** Largest file (bytes) edit and str_replace_editor load; an edit's result has at most this many characters. */
  editBytes: 10 * 1024 * 1024,
  /** Entries str_replace_editor's view lists of one directory. */
  viewEntries: 1000,
  /** Characters of numbered lines str_replace_editor shows at once (view, and the snippet after an edit). */
  viewChars: 30_000,
  /** Bytes of a file past editBytes that view scans for the lines asked (from the start). */
  viewScanBytes: 256 * 1024 * 1024,
  imageBytes: 5 * 1024 * 1024,
  globResults: 500,
  grepResults: 500,
} as const;
