// The WorkspaceStore contract against the real thing: loop workspaces (root, loop devices,
// mkfs.ext4; skipped where the service could not use them either) in a folder of this run, and
// Docker volumes on the real engine, labelled with this run and removed by that label.
import { rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { nanoid } from 'nanoid';
import { createLoopWorkspaces, createVolumeWorkspaces } from '../../../host/sandbox/docker/index.ts';
import { runWorkspaceContract } from '../../contract/workspaces/suite.ts';
import { loopWorkspaces, removeLabelled, TEST_LABEL } from './fixtures.ts';

const runId = nanoid(8)
  .toLowerCase()
  .replace(/[^a-z0-9]/g, 'x');
const dir = join(tmpdir(), `dsh-ws-contract-${runId}`);
runWorkspaceContract(
  'loop',
  {
    open: () => createLoopWorkspaces(dir),
    bounded: true,
    owned: true,
    async cleanup() {
      await createLoopWorkspaces(dir).sweep([], true);
      await rmdir(dir).catch(() => {});
    },
  },
  { skip: !loopWorkspaces },
);

const docker = new Docker();
runWorkspaceContract('volume (Docker engine)', {
  open: () => createVolumeWorkspaces(docker),
  labels: { [TEST_LABEL]: runId },
  bounded: false,
  owned: false,
  cleanup: () => removeLabelled(docker, `${TEST_LABEL}=${runId}`),
});
