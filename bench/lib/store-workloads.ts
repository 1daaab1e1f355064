// The store workloads bench/store-backends.ts times and bench/lib/pg-*.ts take apart, written once:
// the session-search log (events of one tenant over 10 sessions, one of them carrying `needle-1`
// 90k events back, plus a fifth as many of another tenant's, all carrying it), and an agent over
// HTTP whose one-call batches read a 1 KB file on the memory sandbox.
import type { Store } from '../../host/store/index.ts';
import type { SessionEventInput } from '../../host/store/types.ts';

const WORDS = 'alpha build cache deploy error fixture graph handler index journal kernel lambda module'.split(
  ' ',
);
const result = (sessionId: string, i: number, marker = ''): SessionEventInput => ({
  sessionId,
  type: 'tool.result',
  surface: 'current',
  callId: `call_${i}`,
  data: {
    name: 'bash',
    content: `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} src/m_${i % 500}.ts line ${i} ${marker}`,
  },
});

/** Writes the search log (500 events per append, each flushed); resolves with the searched tenant and its sessions. */
export const fillSearchLog = async (
  store: Store,
  events: number,
): Promise<{ tenantId: string; sessionIds: string[] }> => {
  const tenant = await store.tenants.createTenant('a');
  const other = await store.tenants.createTenant('b');
  const agent = (id: string) =>
    store.agents.create({ tenantId: id, preset: 'standard', mode: 'native', config: {} });
  const sessions = await Promise.all(Array.from({ length: 10 }, () => agent(tenant.id)));
  const foreign = await agent(other.id);
  const write = async (count: number, event: (j: number) => SessionEventInput) => {
    for (let i = 0; i < count; i += 500) {
      const batch: SessionEventInput[] = [];
      for (let j = i; j < i + 500; j++) batch.push(event(j));
      void store.events.append(batch);
      await store.events.flush();
    }
  };
  await write(events, (j) =>
    result((sessions[j % 10] as { id: string }).id, j, j === 10_000 ? 'needle-1' : ''),
  );
  await write(events / 5, (j) => result(foreign.id, j, 'needle-1'));
  return { tenantId: tenant.id, sessionIds: sessions.map((a) => a.id) };
};

/**
 * A tenant and an agent made over HTTP on the service at `url`, a 1 KB file written in its
 * sandbox, and 50 warm-up reads; resolves with the call to time: one `read` of that file per batch.
 */
export const readOverHttp = async (url: string, store: Store): Promise<() => Promise<void>> => {
  const { apiKey } = await store.tenants.createTenant('bench');
  const headers = { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' };
  const created = await fetch(`${url}/v1/agents`, { method: 'POST', headers, body: '{}' });
  const agentId = ((await created.json()) as { id: string }).id;
  const post = async (calls: unknown[]) => {
    const r = await fetch(`${url}/v1/agents/${agentId}/calls`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ calls }),
    });
    const json = (await r.json()) as { results: { ok: boolean }[] };
    if (!json.results[0]?.ok) throw new Error(`${store.backend}: call failed: ${JSON.stringify(json)}`);
  };
  await post([{ id: 'w', name: 'write', arguments: { file_path: 'b.txt', content: 'x'.repeat(1000) } }]);
  const read = [{ id: 'r', name: 'read', arguments: { file_path: 'b.txt' } }];
  for (let i = 0; i < 50; i++) await post(read);
  return () => post(read);
};
