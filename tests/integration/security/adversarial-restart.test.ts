// Adversarial pass: the service restarted while two tenants' work runs. Guarantee: nothing of either
// is lost: a background job keeps running in its container and its whole output is there after the
// restart, a call the shutdown cut gets its one stable result, an idempotency key retried after the
// restart answers the first attempt's outcome (never a second run), and the other tenant's files
// and agents are untouched.
import { expect, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import { until } from '../../helpers/until.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { json, served } from '../api/served.ts';

const service = served('adv-restart', { shutdownGraceMs: 300 });

const calls = (
  server: Running,
  key: string,
  agentId: string,
  list: Loose[],
  headers: Record<string, string> = {},
) =>
  fetch(`${server.url}/v1/agents/${agentId}/calls`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify({ calls: list }),
  }).then(async (r) => ({ status: r.status, json: (await r.json()) as Loose, headers: r.headers }));

const bash = (id: string, command: string, extra: Loose = {}) => ({
  id,
  name: 'bash',
  arguments: { command, description: id, ...extra },
});

it("a restart under two tenants' work loses neither's", async () => {
  const first = await service.start();
  const keyA = (await first.store.tenants.createTenant('restart-a')).apiKey;
  const keyB = (await first.store.tenants.createTenant('restart-b')).apiKey;
  const agentA = (await json(first, keyA, 'POST', '/v1/agents', { preset: 'standard' })).json.id as string;
  const agentB = (await json(first, keyB, 'POST', '/v1/agents', { preset: 'standard' })).json.id as string;
  const job = await calls(first, keyA, agentA, [
    bash('job', 'for i in 1 2 3 4 5 6; do echo line-$i; sleep 1; done; echo job-finished', {
      run_in_background: true,
    }),
  ]);
  const jobId = job.json.results[0].value.jobId as string;
  expect((await calls(first, keyB, agentB, [bash('w', 'echo b-file > b.txt')])).json.results[0].ok).toBe(
    true,
  );
  // B's long call, under an idempotency key, is cut by the shutdown.
  const cut = calls(first, keyB, agentB, [bash('long', 'echo started >> ran.txt; sleep 600')], {
    'Idempotency-Key': 'cut-by-restart',
  });
  await until(
    async () =>
      (
        await calls(first, keyB, agentB, [bash('p', 'cat ran.txt 2>/dev/null')])
      ).json.results[0].content?.[0]?.text?.includes('started'),
    { what: 'the long call to start', timeoutMs: 30_000 },
  );
  await service.stop(first);
  const cutAnswer = await cut;
  expect(cutAnswer.status).toBe(200);
  expect(cutAnswer.json.results[0].error.code).toBe('SHUTTING_DOWN');

  const second = await service.start();
  // The job ran on through the restart: its whole output is there.
  await until(
    async () => {
      const [out] = (
        await calls(second, keyA, agentA, [{ id: 'o', name: 'job_output', arguments: { job_id: jobId } }])
      ).json.results;
      return String(out.value?.output).includes('job-finished');
    },
    { what: 'the job to finish after the restart', timeoutMs: 30_000 },
  );
  const [out] = (
    await calls(second, keyA, agentA, [{ id: 'o2', name: 'job_output', arguments: { job_id: jobId } }])
  ).json.results;
  for (let i = 1; i <= 6; i++) expect(out.value.output).toContain(`line-${i}\n`);
  // The key retried after the restart answers the first attempt, and runs nothing again.
  const retried = await calls(second, keyB, agentB, [bash('long', 'echo started >> ran.txt; sleep 600')], {
    'Idempotency-Key': 'cut-by-restart',
  });
  expect(retried.status).toBe(200);
  expect(retried.headers.get('idempotent-replayed')).toBe('true');
  expect(retried.json.results[0].ok).toBe(false);
  const [ran] = (await calls(second, keyB, agentB, [bash('c', 'wc -l < ran.txt; cat b.txt')])).json.results;
  expect(ran.content[0].text).toMatch(/^1\n/);
  expect(ran.content[0].text).toContain('b-file');
  // Neither sees the other's agent.
  expect((await json(second, keyA, 'GET', `/v1/agents/${agentB}`)).status).toBe(404);
}, 180_000);
