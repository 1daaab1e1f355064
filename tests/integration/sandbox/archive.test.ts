// Bulk transfer of files larger than one sandboxd frame, in both directions, byte-exact.

import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Sandbox } from '../../../host/sandbox/types.ts';
import { makeTar } from '../../contract/sandbox/suite.ts';
import { dockerFixture } from './fixtures.ts';

const fx = dockerFixture();
const provider = fx.provider();
let sb: Sandbox;
beforeAll(async () => {
  sb = await provider.create({ tenantId: 't', agentId: 'bulk' });
});
afterAll(async () => {
  await provider.close();
  await fx.sweep();
});

it('uploads and downloads a 20 MiB file byte-exact', async () => {
  const body = randomBytes(20 * 1024 * 1024);
  const sha = createHash('sha256').update(body).digest('hex');
  const res = await sb.archive.upload('big', await makeTar([{ name: 'blob.bin', body }]));
  expect(res).toEqual({ files: 1, bytes: 20 * 1024 * 1024 });
  expect((await sb.exec('sha256sum big/blob.bin')).stdout.split(' ')[0]).toBe(sha);
  expect((await sb.fs.list('big')).map((e) => e.name)).toEqual(['blob.bin']);
  const { extract } = await import('tar-stream');
  const ex = extract();
  (await sb.archive.download('big')).pipe(ex);
  for await (const entry of ex) {
    const h = createHash('sha256');
    for await (const c of entry as AsyncIterable<Buffer>) h.update(c);
    expect([entry.header.name, h.digest('hex')]).toEqual(['blob.bin', sha]);
  }
});
