// Archive uploads waiting in the spool, through the public API: a tenant that starts uploads and
// stalls them holds at most its share of slots (DSH_TENANT_ARCHIVE_UPLOADS), the service at most
// DSH_ARCHIVE_UPLOADS; one more answers 429 RATE_LIMITED before its body is read, another tenant
// still uploads within what is left, and a finished upload gives its slot back.
import { buffer } from 'node:stream/consumers';
import { pack } from 'tar-stream';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { until } from '../../helpers/until.ts';
import { type Api, type Loose, makeApi } from './harness.ts';

let api: Api;
beforeEach(async () => {
  api = await makeApi({ tenantArchiveUploads: 2, archiveUploads: 3 });
});
afterEach(async () => {
  await api.close();
});

const tarOf = async (name: string): Promise<Buffer> => {
  const p = pack();
  p.entry({ name }, 'x');
  p.finalize();
  return buffer(p as never);
};

/** An upload whose body stops after its first 512 bytes until `finish` sends the rest. */
const stalled = (tar: Buffer) => {
  let pulled = 0;
  let finish = (): void => {};
  const go = new Promise<void>((r) => {
    finish = r;
  });
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      pulled++;
      if (pulled === 1) return controller.enqueue(tar.subarray(0, 512));
      await go;
      controller.enqueue(tar.subarray(512));
      controller.close();
    },
  });
  return { body, finish, pulled: () => pulled };
};

const upload = (key: string, agentId: string, body: Buffer | ReadableStream<Uint8Array>) =>
  api.app.request(`/v1/agents/${agentId}/archive?path=d`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${key}` },
    body,
    duplex: 'half',
  } as RequestInit);

it('holds a tenant to its share of spooled uploads, and the service to its total', async () => {
  const a = await api.createAgent(api.keyA);
  const b = await api.createAgent(api.keyB);
  const tar = await tarOf('f.txt');
  const held = [stalled(tar), stalled(tar)];
  const pending = held.map((s) => upload(api.keyA, a.id, s.body));
  await until(() => held.every((s) => s.pulled() >= 2), { what: "tenant A's two uploads to be spooling" });

  // A third of A's: refused at once, its body not read.
  const third = stalled(tar);
  const refused = await upload(api.keyA, a.id, third.body);
  expect(refused.status).toBe(429);
  expect(((await refused.json()) as Loose).error).toMatchObject({
    code: 'RATE_LIMITED',
    data: { limit: 'archiveUploads', max: 2 },
  });
  expect(third.pulled()).toBeLessThanOrEqual(1);

  // B uploads within what is left of the service's three; with one of its own stalled, the service is full.
  expect((await upload(api.keyB, b.id, tar)).status).toBe(200);
  const bHeld = stalled(tar);
  const bPending = upload(api.keyB, b.id, bHeld.body);
  await until(() => bHeld.pulled() >= 2, { what: "tenant B's upload to be spooling" });
  const full = await upload(api.keyB, b.id, tar);
  expect(full.status).toBe(429);
  expect(((await full.json()) as Loose).error.data).toEqual({ limit: 'archiveUploads', max: 3 });

  // Finished uploads give their slots back.
  for (const s of [...held, bHeld]) s.finish();
  expect((await Promise.all([...pending, bPending])).map((r) => r.status)).toEqual([200, 200, 200]);
  expect((await upload(api.keyA, a.id, tar)).status).toBe(200);
  expect((await api.request(api.keyA, 'GET', `/v1/agents/${a.id}/files?path=d/f.txt`)).text).toBe('x');
});

it('gives the slot back when an upload is refused part-way', async () => {
  const a = await api.createAgent(api.keyA);
  for (let i = 0; i < 4; i++) {
    const res = await upload(api.keyA, a.id, Buffer.from('not a tar at all'.repeat(64)));
    expect(res.status).toBe(400);
  }
  expect((await upload(api.keyA, a.id, await tarOf('g.txt'))).status).toBe(200);
});
