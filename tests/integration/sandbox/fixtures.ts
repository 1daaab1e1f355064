// Fixtures for docker-provider integration tests: one run id per test file, every container and
// volume labelled with it, and a sweep that removes by that label only (the engine may be shared).
// The sweep closes every provider the fixture made first, so a test that failed before its own
// close() leaves no pool refilling behind the sweep.
// Workspaces are the service's own kind: loop-mounted file systems in a folder of this run (as root,
// which CI is), else Docker volumes.

import { rm, rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { nanoid } from 'nanoid';
import { SandboxError } from '../../../host/errors.ts';
import {
  createDockerProvider,
  createLoopWorkspaces,
  createVolumeWorkspaces,
  type DockerProviderOptions,
  loopUnavailable,
  type WorkspaceStore,
} from '../../../host/sandbox/docker/index.ts';
import type { ConnectSandboxd } from '../../../host/sandbox/docker/session.ts';

/** Loop workspaces where the service itself would use them (root, loop devices, mkfs.ext4): CI is root. */
export const loopWorkspaces = (await loopUnavailable({ dockerHost: process.env.DOCKER_HOST })) === undefined;

export const TEST_LABEL = 'dsh.test';

export const sandboxImage = (): string => {
  const image = process.env.DSH_SANDBOX_IMAGE;
  if (!image) throw new Error('DSH_SANDBOX_IMAGE is not set (tests/integration/global-setup.ts sets it)');
  return image;
};

export interface Fixture {
  docker: Docker;
  runId: string;
  options: (extra?: Partial<DockerProviderOptions>) => DockerProviderOptions;
  provider: (extra?: Partial<DockerProviderOptions>) => ReturnType<typeof createDockerProvider>;
  /** Closed by sweep() before it removes anything (a test may register providers it made itself). */
  closeLater: (provider: { close(): Promise<void> }) => void;
  /** This run's workspace store (every provider of the fixture shares it, as one service would). */
  workspaces: WorkspaceStore;
  /** Where loop workspaces live (undefined with volumes). */
  workspacesDir: string | undefined;
  /** The containers' link folders (every provider of the fixture uses links, as the service does). */
  linksDir: string;
  sweep: () => Promise<void>;
}

/** Force-removes every container and volume carrying `label` (`key=value`); gone ones are fine. */
export const removeLabelled = async (docker: Docker, label: string): Promise<void> => {
  const filters = { label: [label] };
  for (const c of await docker.listContainers({ all: true, filters }))
    await docker
      .getContainer(c.Id)
      .remove({ force: true })
      .catch(() => {});
  for (const v of (await docker.listVolumes({ filters })).Volumes ?? [])
    await docker
      .getVolume(v.Name)
      .remove()
      .catch(() => {});
};

/**
 * `runId`: another process's fixture, to make sandboxes it sweeps (a service run as a child).
 * `docker`: the engine (default the main one; tests/helpers/gvisor-engine.ts: a private one).
 */
export const dockerFixture = (
  runId = nanoid(8)
    .toLowerCase()
    .replace(/[^a-z0-9]/g, 'x'),
  docker = new Docker(),
): Fixture => {
  const workspacesDir = loopWorkspaces ? join(tmpdir(), `dsh-ws-${runId}`) : undefined;
  const workspaces = workspacesDir ? createLoopWorkspaces(workspacesDir) : createVolumeWorkspaces(docker);
  const linksDir = join(tmpdir(), `dsh-ln-${runId}`);
  const options = (extra: Partial<DockerProviderOptions> = {}): DockerProviderOptions => ({
    docker,
    image: sandboxImage(),
    labels: { [TEST_LABEL]: runId },
    // Names read `dsht-<runId>-agent-…`: the run is the fixture's instance.
    prefix: 'dsht',
    instance: runId,
    idleMs: 0,
    workspaces,
    links: linksDir,
    ...extra,
  });
  const open: Array<{ close(): Promise<void> }> = [];
  return {
    docker,
    runId,
    options,
    workspaces,
    workspacesDir,
    linksDir,
    closeLater: (provider) => void open.push(provider),
    provider: (extra) => {
      const provider = createDockerProvider(options(extra));
      open.push(provider);
      return provider;
    },
    async sweep() {
      for (const provider of open.splice(0)) await provider.close().catch(() => {});
      await removeLabelled(docker, `${TEST_LABEL}=${runId}`);
      // Unmounts and deletes every workspace of this run, then its (now empty) folder.
      await workspaces.sweep([], true);
      if (workspacesDir) await rmdir(workspacesDir).catch(() => {});
      await rm(linksDir, { recursive: true, force: true });
    },
  };
};

/** What `sh -c script` printed in the container as the agent's user (Docker's stream frames included). */
export const shellOutput = async (container: Docker.Container, script: string): Promise<string> => {
  const exec = await container.exec({
    Cmd: ['sh', '-c', script],
    User: '1000:1000',
    AttachStdout: true,
    AttachStderr: true,
  });
  const stream = await exec.start({});
  const chunks: Buffer[] = [];
  await new Promise((r) => {
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', r);
  });
  return Buffer.concat(chunks).toString();
};

/**
 * A stand-in for sandboxd that answers ping and nothing else: for tests of the container itself
 * (its configuration, pool, lifecycle) that must not depend on sandboxd's features.
 */
export const pingOnlyConnect: ConnectSandboxd = () => {
  const no = async (): Promise<never> => {
    throw new SandboxError('SANDBOX_UNAVAILABLE', 'ping-only test session');
  };
  const fs = new Proxy({}, { get: () => no });
  return { fs: fs as never, jobs: fs as never, exec: no, ping: async () => 0, close: () => {} };
};
