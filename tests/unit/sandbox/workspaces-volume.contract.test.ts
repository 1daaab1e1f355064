// The volume workspace store against an in-memory engine (volume-engine.ts): the shared contract,
// and what only this store does (labels on the volume, engine failures as stable codes).
import { describe, expect, it } from 'vitest';
import { createVolumeWorkspaces } from '../../../host/sandbox/docker/workspaces/volume.ts';
import { codeOf } from '../../contract/sandbox/suite.ts';
import { runWorkspaceContract } from '../../contract/workspaces/suite.ts';
import { createVolumeEngine } from './volume-engine.ts';

const shared = createVolumeEngine();
runWorkspaceContract('volume (in-memory engine)', {
  open: () => createVolumeWorkspaces(shared.docker),
  bounded: false,
  owned: false,
});

describe('volume workspaces', () => {
  it('labels the volume, so the instance that made it can find and remove it', async () => {
    const engine = createVolumeEngine();
    await createVolumeWorkspaces(engine.docker).create('ws-a', 0, { 'dsh.instance': 'abc' });
    expect(engine.volumes.get('ws-a')).toEqual({ 'dsh.instance': 'abc' });
  });

  it('reports an engine that does not answer as SANDBOX_UNAVAILABLE, never as a gone workspace', async () => {
    const engine = createVolumeEngine();
    const store = createVolumeWorkspaces(engine.docker);
    await store.create('ws-b', 0, {});
    engine.down = true;
    const mount = { type: 'volume', source: 'ws-b' };
    expect(await codeOf(store.create('ws-c', 0, {}))).toBe('SANDBOX_UNAVAILABLE');
    expect(await codeOf(store.exists(mount))).toBe('SANDBOX_UNAVAILABLE');
    expect(await codeOf(store.remove(mount))).toBe('SANDBOX_UNAVAILABLE');
    engine.down = false;
    expect(await store.exists(mount)).toBe(true);
  });
});
