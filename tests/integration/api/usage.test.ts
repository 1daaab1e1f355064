// An agent's usage over real HTTP and a real container: its workspace's disk (a loop-mounted ext4
// of the agent's diskMb) grows by what a command writes, the same figure the operator's workspace
// list shows, and the container's memory and CPU come from Docker's stats.
import { expect, it } from 'vitest';
import { loopWorkspaces } from '../sandbox/fixtures.ts';
import { json, served } from './served.ts';

const ADMIN = 'admin-key-for-the-usage-test-0123456789';
const MiB = 1024 * 1024;
const service = served('usage', { adminKey: ADMIN });

it.skipIf(!loopWorkspaces)(
  'disk used grows by a 5 MiB file written in the sandbox; the limit is the agent diskMb',
  async () => {
    const server = await service.start();
    const key = (await server.store.tenants.createTenant('usage')).apiKey;
    const http = async (path: string, body?: unknown, as = key) => {
      const res = await json(server, as, body === undefined ? 'GET' : 'POST', path, body);
      expect(res.status, `${path}: ${JSON.stringify(res.json)}`).toBeLessThan(300);
      return res.json;
    };
    const agent = await http('/v1/agents', { preset: 'standard', sandbox: { diskMb: 64, memoryMb: 256 } });
    const none = await http(`/v1/agents/${agent.id}/usage`);
    expect(none.state.sandbox).toBe('none');
    expect(none.disk).toBeUndefined();

    const bash = (command: string) =>
      http(`/v1/agents/${agent.id}/calls`, {
        calls: [{ id: command.slice(0, 20), name: 'bash', arguments: { command, description: command } }],
      });
    expect((await bash('true')).results[0].ok).toBe(true);
    const before = await http(`/v1/agents/${agent.id}/usage`);
    expect(before.state.sandbox).toBe('ready');
    expect(before.disk.limitBytes).toBe(64 * MiB);

    const wrote = await bash('head -c 5242880 /dev/urandom > /workspace/big.bin && sync');
    expect(wrote.results[0].ok).toBe(true);
    const after = await http(`/v1/agents/${agent.id}/usage`);
    expect(after.disk.limitBytes).toBe(64 * MiB);
    expect(after.disk.usedBytes - before.disk.usedBytes).toBeGreaterThanOrEqual(5 * MiB);
    expect(after.log.calls).toBe(2);
    // Stats are bounded by a timeout: on a loaded machine they may be left out, never wrong.
    if (after.memory !== undefined) {
      expect(after.memory.limitBytes).toBe(256 * MiB);
      expect(after.memory.usedBytes).toBeGreaterThan(0);
    }

    const listed = await http('/v1/admin/workspaces', undefined, ADMIN);
    const mine = listed.workspaces.find((w: { agentId: string }) => w.agentId === agent.id);
    expect(mine.disk.limitBytes).toBe(64 * MiB);
    expect(mine.disk.usedBytes).toBeGreaterThanOrEqual(after.disk.usedBytes - MiB);
  },
  120_000,
);
