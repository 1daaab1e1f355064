// An in-memory stand-in for the part of the Docker engine the volume workspace store uses
// (createVolume, getVolume().inspect/remove), answering as dockerode does: a missing volume is a
// 404 with the engine's message. The same contract runs against the real engine in
// tests/integration/sandbox/workspaces.contract.test.ts, which keeps this stand-in honest.

import type Docker from 'dockerode';

export interface VolumeEngine {
  docker: Docker;
  /** The volumes that exist, by name, with their labels. */
  volumes: Map<string, Record<string, string>>;
  /** While set, every call fails as an engine that does not answer. */
  down: boolean;
}

const noSuchVolume = (name: string) =>
  Object.assign(new Error(`(HTTP code 404) no such volume - get ${name}: no such volume`), {
    statusCode: 404,
    json: { message: `get ${name}: no such volume` },
  });
const refused = () =>
  Object.assign(new Error('connect ECONNREFUSED /var/run/docker.sock'), { code: 'ECONNREFUSED' });

export const createVolumeEngine = (): VolumeEngine => {
  const engine: VolumeEngine = { docker: undefined as never, volumes: new Map(), down: false };
  const answer = (): void => {
    if (engine.down) throw refused();
  };
  const docker = {
    async createVolume(options: { Name: string; Labels?: Record<string, string> }) {
      answer();
      // Docker answers a create of an existing local volume with that volume.
      if (!engine.volumes.has(options.Name)) engine.volumes.set(options.Name, { ...options.Labels });
      return { Name: options.Name };
    },
    getVolume(name: string) {
      return {
        name,
        async inspect() {
          answer();
          const labels = engine.volumes.get(name);
          if (!labels) throw noSuchVolume(name);
          return { Name: name, Labels: labels };
        },
        async remove() {
          answer();
          if (!engine.volumes.delete(name)) throw noSuchVolume(name);
        },
      };
    },
  };
  engine.docker = docker as unknown as Docker;
  return engine;
};
