// Small helpers for the setup scripts: run a command and capture or stream its output.

import { spawn } from 'node:child_process';
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command; never throws for a non-zero exit (the caller decides). */
export const run = (
  command: string,
  args: string[],
  options: { input?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number; inherit?: boolean } = {},
): Promise<RunResult> =>
  new Promise((resolve) => {
    const child = spawn(command, args, {
      env: options.env ?? process.env,
      stdio: [
        options.input === undefined ? 'ignore' : 'pipe',
        options.inherit ? 'inherit' : 'pipe',
        options.inherit ? 'inherit' : 'pipe',
      ],
      timeout: options.timeoutMs,
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', (error) => resolve({ code: 127, stdout, stderr: stderr + error.message }));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
    if (options.input !== undefined) child.stdin?.end(options.input);
  });

const isExecutable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
};

/**
 * The program `name` as `command -v` finds it (a name with a slash as it is, else the first
 * executable file of that name along PATH), looked up here: a shell started for it cost every
 * `npm start` a process.
 */
export const which = async (name: string): Promise<string | undefined> => {
  if (name.includes('/')) return isExecutable(name) ? name : undefined;
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const path = dir === '' ? `./${name}` : join(dir, name);
    if (isExecutable(path)) return path;
  }
  return undefined;
};

export const log = (message: string): void => {
  process.stderr.write(`dsh-sandbox: ${message}\n`);
};
