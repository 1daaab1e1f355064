// The probe that decides whether the service can give workspaces a disk limit (loop file systems).
// Whether this machine can is the machine's business; an engine on another machine never can.
import { describe, expect, it } from 'vitest';
import { loopUnavailable } from '../../../host/sandbox/docker/workspaces/probe.ts';

describe('loopUnavailable', () => {
  it('refuses loop workspaces for an engine on another machine, which cannot see host mounts', async () => {
    const local = await loopUnavailable({ dockerHost: 'unix:///var/run/docker.sock' });
    expect(await loopUnavailable()).toBe(local);
    for (const dockerHost of ['tcp://10.0.0.2:2376', 'ssh://ops@build']) {
      // A machine that cannot mount loops says so first; one that can names the remote engine.
      expect(await loopUnavailable({ dockerHost })).toBe(
        local ??
          `the Docker engine at DOCKER_HOST=${dockerHost} is not on this machine, so it cannot see host mounts`,
      );
    }
  });
});
