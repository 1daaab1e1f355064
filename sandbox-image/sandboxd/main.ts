// sandboxd entry point: the main process of every sandbox container (under tini, as uid 1000), and
// the process the unit tests spawn locally. It serves the framed RPC on stdin/stdout and logs to
// stderr. Settings: SANDBOXD_ROOT (default /workspace), SANDBOXD_STATE (default /tmp/sandboxd: it
// lasts as long as the container, which is as long as the jobs it records), SANDBOXD_EXIT_ON_EOF=1
// (exit, killing our jobs, when stdin closes: for local runs; in a container stdin stays open across
// detach and re-attach, and sandboxd must outlive any one host connection), SANDBOXD_OP_DEADLINE_MS
// (the deadline of a call that does not wait by design, default 30000: server.ts).
// Invariant: no request, frame or stray error ends this process.

import { sharedSpawner } from './launch.ts';
import { startServer } from './server.ts';

const log = (line: string): void => {
  process.stderr.write(`sandboxd: ${line}\n`);
};

process.on('uncaughtException', (e) =>
  log(`uncaught: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`),
);
process.on('unhandledRejection', (e) =>
  log(`unhandled rejection: ${e instanceof Error ? e.message : String(e)}`),
);
process.stdout.on('error', (e) => log(`stdout: ${e.message}`));

const main = async (): Promise<void> => {
  const root = process.env.SANDBOXD_ROOT || '/workspace';
  const stateDir = process.env.SANDBOXD_STATE || '/tmp/sandboxd';
  const deadline = Number(process.env.SANDBOXD_OP_DEADLINE_MS);
  const server = await startServer({
    input: process.stdin,
    output: process.stdout,
    root,
    stateDir,
    log,
    ...(Number.isInteger(deadline) && deadline > 0 ? { opDeadlineMs: deadline } : {}),
  });
  // Start the command spawner now, so that the agent's first exec is as fast as the rest.
  sharedSpawner().start();
  // Keep running whatever happens to stdin (a container's stdin only closes if the host asks).
  const keepAlive = setInterval(() => {}, 1 << 30);
  process.stdin.on('end', () => {
    if (process.env.SANDBOXD_EXIT_ON_EOF !== '1') return log('stdin closed; still serving jobs');
    server.killJobs();
    clearInterval(keepAlive);
    process.exit(0);
  });
  log(`ready (root ${root}, state ${stateDir}, pid ${process.pid}, node ${process.version})`);
};

main().catch((e: unknown) => {
  log(`failed to start: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
