// The docker provider's runtimes (host/sandbox/docker/runtimes.ts): what the engine offers is read
// from `docker info`, a failed read is tried again, a container's runtime is read back from its
// inspect, and a container is made under the engine's name of its runtime with the same hardening.
import type Docker from 'dockerode';
import { describe, expect, it } from 'vitest';
import { containerConfig } from '../../../host/sandbox/docker/config.ts';
import {
  agentLimits,
  engineLimits,
  GVISOR_MEMORY_HEADROOM,
  GVISOR_PIDS_HEADROOM,
  runtimeCatalog,
} from '../../../host/sandbox/docker/runtimes.ts';
import { codeOf } from '../../contract/sandbox/suite.ts';

const engine = (answers: Array<Record<string, unknown> | Error>) => {
  let calls = 0;
  const docker = {
    info: async () => {
      const answer = answers[Math.min(calls++, answers.length - 1)];
      if (answer instanceof Error) throw answer;
      return answer;
    },
  } as unknown as Docker;
  return { docker, calls: () => calls };
};

const inspect = (runtime?: string) =>
  ({ HostConfig: { Runtime: runtime } }) as unknown as Docker.ContainerInspectInfo;

describe('the runtimes a Docker engine offers', () => {
  it('gvisor where the engine lists runsc (or the name the operator gave), runc always', async () => {
    const withRunsc = engine([{ Runtimes: { runc: {}, runsc: { path: '/usr/bin/runsc' } } }]);
    expect(await runtimeCatalog(withRunsc.docker).offered()).toEqual(['runc', 'gvisor']);
    const named = engine([{ Runtimes: { runc: {}, 'gvisor-ptrace': {} } }]);
    expect(await runtimeCatalog(named.docker, { gvisor: 'gvisor-ptrace' }).offered()).toEqual([
      'runc',
      'gvisor',
    ]);
    expect(await runtimeCatalog(engine([{ Runtimes: { runc: {} } }]).docker).offered()).toEqual(['runc']);
    expect(await runtimeCatalog(engine([{}]).docker).offered()).toEqual(['runc']);
  });

  it('reads once, and again after a failed read; require() refuses what is not offered', async () => {
    const e = engine([new Error('engine down'), { Runtimes: { runc: {} } }]);
    const catalog = runtimeCatalog(e.docker);
    expect(await codeOf(catalog.offered())).toBe('SANDBOX_UNAVAILABLE');
    expect(await catalog.offered()).toEqual(['runc']);
    await catalog.offered();
    expect(e.calls()).toBe(2);
    await catalog.require('runc');
    expect(await codeOf(catalog.require('gvisor'))).toBe('RUNTIME_UNAVAILABLE');
  });

  it("a container's runtime is read back from its inspect; names it does not know read as runc", () => {
    const catalog = runtimeCatalog(engine([{}]).docker);
    expect(catalog.of(inspect('runsc'))).toBe('gvisor');
    expect(catalog.of(inspect('runc'))).toBe('runc');
    expect(catalog.of(inspect(undefined))).toBe('runc');
    expect(catalog.of(inspect('kata'))).toBe('runc');
    expect(catalog.engineName('gvisor')).toBe('runsc');
    expect(catalog.engineName('runc')).toBeUndefined();
  });

  it("a gVisor container's pids and memory limits carry gVisor's own, and read back without them", () => {
    const limits = { memoryBytes: 1, nanoCpus: 1, pids: 64, maxReadBytes: 1, maxOutputBytes: 1 };
    expect(engineLimits('gvisor', limits).pids).toBe(64 + GVISOR_PIDS_HEADROOM);
    expect(engineLimits('runc', limits)).toBe(limits);
    expect(agentLimits('gvisor', { pids: 64 + GVISOR_PIDS_HEADROOM }).pids).toBe(64);
    expect(agentLimits('runc', { pids: 64 }).pids).toBe(64);
    expect(engineLimits('gvisor', limits).memoryBytes).toBe(1 + GVISOR_MEMORY_HEADROOM);
    expect(agentLimits('gvisor', { memoryBytes: 1 + GVISOR_MEMORY_HEADROOM }).memoryBytes).toBe(1);
  });

  it('a container under runsc keeps every hardening setting; without a runtime none is named', () => {
    const spec = {
      image: 'img',
      name: 'n',
      workspace: { Type: 'volume' as const, Source: 'n-ws', Target: '/workspace' },
      labels: {},
      limits: { memoryBytes: 1, nanoCpus: 1, pids: 1, maxReadBytes: 1, maxOutputBytes: 1 },
      tmpBytes: 1024,
    };
    const plain = containerConfig(spec);
    const gvisor = containerConfig({ ...spec, runtime: 'runsc' });
    expect(plain.HostConfig).not.toHaveProperty('Runtime');
    expect(gvisor.HostConfig?.Runtime).toBe('runsc');
    const { Runtime: _r, ...rest } = gvisor.HostConfig ?? {};
    expect(rest).toEqual(plain.HostConfig);
  });
});
