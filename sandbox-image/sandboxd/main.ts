// sandboxd entry point: the main process of every sandbox container (under tini, started as root
// and at once running apart from the agent: identity.ts), and the process the unit tests spawn
// locally. It serves the framed RPC on stdin/stdout and logs to stderr. Settings: SANDBOXD_AGENT
// (uid:gid of the agent; set in the image, unset locally), SANDBOXD_SERVER_GID (the gid its
// programs on pipes run with: identity.ts; required with SANDBOXD_AGENT), SANDBOXD_HOME (the agent's home, HOME of
// its commands; default: an empty directory in the state directory), SANDBOXD_ROOT (default /workspace),
// SANDBOXD_STATE (default /tmp/sandboxd: it lasts as long as the container, which is as long as the
// jobs it records), SANDBOXD_EXIT_ON_EOF=1
// (exit, killing our jobs, when stdin closes: for local runs; in a container stdin stays open across
// detach and re-attach, and sandboxd must outlive any one host connection), SANDBOXD_OP_DEADLINE_MS
// (the deadline of a call that does not wait by design, default 30000: server.ts),
// SANDBOXD_PROXY_PORT (the egress proxy's port on 127.0.0.1: egress.ts; default 3128 in the image,
// any free port in local runs), SANDBOXD_LINK (the host's link socket, which `dial` connects:
// link.ts; set by the host when it bind-mounts one, unset otherwise), SANDBOXD_RUNTIME (the container
// runtime, set by the host under gVisor only: `gvisor` puts the image's tools for it first on PATH,
// runtime-path.ts).
// Invariant: no request, frame or stray error ends this process.

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { agentIds, makeDropBox, nonDumpable, runApart, serverGid } from './identity.ts';
import { configureSharedSpawner, sharedSpawner } from './launch.ts';
import { runtimePath } from './runtime-path.ts';
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
  // Before anything is spawned: every program inherits PATH (runtime-path.ts).
  const path = runtimePath(process.env.SANDBOXD_RUNTIME, process.env.PATH);
  if (path !== undefined) process.env.PATH = path;
  const agent = process.env.SANDBOXD_AGENT;
  // The spawner's FIFO box must be made as root, before sandboxd takes the agent's effective ids.
  const box = agent ? makeDropBox('/tmp/.sandboxd-fifos') : undefined;
  runApart(agent, process.env.SANDBOXD_SERVER_GID);
  configureSharedSpawner(box ? { box } : {});
  const root = process.env.SANDBOXD_ROOT || '/workspace';
  const stateDir = process.env.SANDBOXD_STATE || '/tmp/sandboxd';
  // The agent's home: the image's /home/agent, or (local runs) an empty one of ours, never the home
  // of whoever started sandboxd, so that their shell rc files never run in the agent's shells.
  if (!process.env.SANDBOXD_HOME) {
    process.env.SANDBOXD_HOME = join(stateDir, 'home');
    mkdirSync(process.env.SANDBOXD_HOME, { recursive: true, mode: 0o700 });
  }
  const deadline = Number(process.env.SANDBOXD_OP_DEADLINE_MS);
  const proxyPort = Number(process.env.SANDBOXD_PROXY_PORT || (agent ? 3128 : 0));
  const server = await startServer({
    input: process.stdin,
    output: process.stdout,
    root,
    stateDir,
    log,
    ...(Number.isInteger(deadline) && deadline > 0 ? { opDeadlineMs: deadline } : {}),
    ...(Number.isInteger(proxyPort) && proxyPort >= 0 && proxyPort < 65536 ? { proxyPort } : {}),
    ...(process.env.SANDBOXD_LINK ? { linkPath: process.env.SANDBOXD_LINK } : {}),
    // Start the command spawner once the host's first call is answered (its ping: the sandbox is
    // ready from there), so that the agent's first exec is as fast as the rest without the spawn
    // delaying that answer, and run a first command of our own through it (warm-up.ts). An exec
    // before then starts the spawner too (launch.ts).
    onFirstAnswer: () => sharedSpawner().start(),
    warmUp: sharedSpawner(),
  });
  // Keep running whatever happens to stdin (a container's stdin only closes if the host asks).
  const keepAlive = setInterval(() => {}, 1 << 30);
  process.stdin.on('end', () => {
    if (process.env.SANDBOXD_EXIT_ON_EOF !== '1') return log('stdin closed; still serving jobs');
    server.killJobs();
    clearInterval(keepAlive);
    process.exit(0);
  });
  const ids = agentIds();
  const identity = ids
    ? `apart from the agent: uid 0/${ids.uid}/0, ${nonDumpable() ? 'non-dumpable' : 'DUMPABLE'}, servers' gid ${serverGid()}`
    : `uid ${process.getuid?.()}`;
  log(`ready (root ${root}, state ${stateDir}, pid ${process.pid}, node ${process.version}, ${identity})`);
};

main().catch((e: unknown) => {
  log(`failed to start: ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
