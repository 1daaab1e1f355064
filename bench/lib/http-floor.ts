// The floor under a call over HTTP on this machine, for bench/http-latency.ts: a bare node:http
// server in a process of its own that answers a POST with the bytes a one-call batch's answer has
// (~1.5 KB of JSON), either at once (the HTTP floor: two process wake-ups, node:http's parse and
// answer) or after one round trip to a third process over a pipe (the floor of a call that needs
// its sandbox: a read goes to sandboxd and back). Nothing of the service runs: no routing,
// authentication, validation, log or tool; what the service's rows cost above these is its own.
import { type ChildProcess, spawn } from 'node:child_process';
import { Agent, request } from 'node:http';

const SERVER = `
const http = require('node:http');
const { spawn } = require('node:child_process');
const echo = spawn(process.execPath, ['-e', "process.stdin.on('data', (b) => process.stdout.write(b))"], {
  stdio: ['pipe', 'pipe', 'inherit'],
});
const waiting = [];
echo.stdout.on('data', () => waiting.shift()?.());
const answer = JSON.stringify({ results: [{ id: 'c', ok: true, output: { content: 'x'.repeat(1400) } }] });
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    JSON.parse(Buffer.concat(chunks).toString() || '{}');
    const send = () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(answer);
    };
    if (req.url !== '/hop') return send();
    waiting.push(send);
    echo.stdin.write(Buffer.alloc(1400, 'y'));
  });
});
server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
process.on('SIGTERM', () => { echo.kill(); process.exit(0); });
`;

export interface FloorServer {
  /** One POST of a one-call batch's bytes: `hop` waits for a round trip to another process first. */
  post(hop: boolean): Promise<void>;
  /** The floor server's process id (its main thread's CPU is read beside the service's). */
  pid: number;
  stop(): Promise<void>;
}

export const startFloorServer = async (): Promise<FloorServer> => {
  const child: ChildProcess = spawn(process.execPath, ['-e', SERVER], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.once('data', (b: Buffer) => resolve(Number(b.toString().trim())));
    child.once('exit', () => reject(new Error('the floor server exited')));
  });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ calls: [{ id: 'c', name: 'read', arguments: { file_path: 'bench.txt' } }] });
  const post = (hop: boolean): Promise<void> =>
    new Promise((resolve, reject) => {
      const req = request(
        `http://127.0.0.1:${port}/${hop ? 'hop' : 'direct'}`,
        {
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            JSON.parse(Buffer.concat(chunks).toString());
            resolve();
          });
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  return {
    post,
    pid: child.pid ?? 0,
    stop: async () => {
      agent.destroy();
      if (child.exitCode !== null || child.signalCode !== null) return; // stopped already
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
};
