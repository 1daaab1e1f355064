// The tenant's checkpoint quota as the composed service wires it (assembleAgents: each agent's bounds
// from its tenant's settings, under the operator's per-agent maximum, under the tenant's quota):
// the agents' tracked writes all run, the tenant's oldest checkpoints are dropped past the quota, and
// the agent service reports what the tenant holds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import type { ToolCall } from '../../../host/tools/types.ts';
import { composedService } from '../../helpers/composed.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-ckpt-composed-'));
const { agents, tenant, close } = await composedService({
  checkpointDir: dir,
  checkpointMaxBytes: 1500, // each agent keeps one 1000-byte pre-image
  checkpointTenantMaxBytes: (id) => (id === tenant ? 2500 : undefined),
});
afterAll(async () => {
  await close();
  rmSync(dir, { recursive: true, force: true });
});

let n = 0;
const write = (fill: string): ToolCall => ({
  id: `w${++n}`,
  name: 'write',
  arguments: { file_path: 'f.txt', content: fill.repeat(1000) },
});

it("drops the tenant's oldest checkpoint past its quota, every call running", async () => {
  const made: Awaited<ReturnType<typeof agents.create>>[] = [];
  for (let i = 0; i < 3; i++) made.push(await agents.create(tenant, { preset: 'standard' }));
  for (const agent of made) {
    for (const fill of ['a', 'b']) {
      const [result] = await agents.call(agent, [write(fill)], {
        signal: new AbortController().signal,
      });
      expect(result?.ok).toBe(true);
    }
  }
  // Three agents of one pre-image each: 3000 bytes, past 2500: the first agent's went.
  expect(await agents.checkpointBytes(tenant)).toBe(2000);
  const bytesOf = async (i: number) =>
    (await agents.checkpoints(made[i] as (typeof made)[number])?.list())?.reduce(
      (sum, c) => sum + c.bytes,
      0,
    );
  expect([await bytesOf(0), await bytesOf(1), await bytesOf(2)]).toEqual([0, 1000, 1000]);
});
