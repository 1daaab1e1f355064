// A control plane started in a process of its own (a test's `serve` child script): its stdout
// lines collected as they come (start-up lines, and every line after), and the URL it printed in
// `listening <url>` once it serves. Rejects, with everything it printed, when it exits first.
import { type ChildProcess, spawn } from 'node:child_process';

export interface ServeProcess {
  child: ChildProcess;
  url: string;
  /** Every stdout line so far; it keeps growing while the process runs. */
  lines: string[];
}

/** Runs `script` with `options` (JSON in argv[2]) under this Node; `name` names it in errors. */
export async function startServeProcess(
  script: string,
  options: unknown,
  name: string,
): Promise<ServeProcess> {
  const child = spawn(process.execPath, [script, JSON.stringify(options)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let buffer = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        buffer += chunk.toString();
        for (let end = buffer.indexOf('\n'); end >= 0; end = buffer.indexOf('\n')) {
          const line = buffer.slice(0, end);
          buffer = buffer.slice(end + 1);
          lines.push(line);
          if (line.startsWith('listening ')) resolve(line.slice('listening '.length));
        }
      });
      child.once('exit', (code, signal) =>
        reject(
          new Error(`${name} exited (${code ?? signal}) before serving:\n${lines.join('\n')}\n${stderr}`),
        ),
      );
    });
    return { child, url, lines };
  } catch (error) {
    throw Object.assign(error as Error, { child });
  }
}
