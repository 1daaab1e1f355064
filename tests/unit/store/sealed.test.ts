// Secrets at rest (host/store/sealed.ts): egress credentials and MCP servers' headers and
// environments are sealed in the database file, so the file (and its WAL) alone shows none of them;
// the same store reopened reads them back, a store opened with another key refuses them with
// CONFIG_INVALID, and a value written before sealing existed is still read.

import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../../host/store/index.ts';
import { parseSecretsKey } from '../../../host/store/sealed.ts';

const dir = mkdtempSync(join(tmpdir(), 'dsh-sealed-'));
const path = join(dir, 'store.db');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SECRET = 'TOPSECRET-sealed-7f3a';
/** Every byte of the database's files, as text. */
const onDisk = () =>
  readdirSync(dir)
    .filter((name) => name.startsWith('store.db') && !name.endsWith('.key'))
    .map((name) => readFileSync(join(dir, name)).toString('latin1'))
    .join('');

describe('secrets at rest', () => {
  let tenantId = '';
  let agentId = '';

  it('keeps egress credentials and MCP server secrets out of the database file', async () => {
    const store = openStore({ path });
    tenantId = (await store.tenants.createTenant('t')).id;
    agentId = (await store.agents.create({ tenantId, preset: 'standard', mode: 'native', config: {} })).id;
    await store.egress.put(tenantId, {
      credentials: [{ name: 'gh', host: 'example.com', header: 'Authorization', value: SECRET }],
    });
    await store.agents.setMcpServers(tenantId, agentId, [
      { name: 'remote', headers: { Authorization: SECRET }, env: { TOKEN: SECRET } },
    ]);
    expect(onDisk()).not.toContain(SECRET);
    expect(JSON.stringify(await store.egress.get(tenantId))).toContain(SECRET);
    store.close();
    expect(onDisk()).not.toContain(SECRET);
    // The key file is the operator's to guard: only its owner may read it.
    expect(readdirSync(dir)).toContain('store.db.key');
  });

  it('reads them back after a restart with the same key', async () => {
    const store = openStore({ path });
    expect(JSON.stringify(await store.egress.get(tenantId))).toContain(SECRET);
    expect(JSON.stringify((await store.agents.get(tenantId, agentId))?.mcpServers)).toContain(SECRET);
    store.close();
  });

  it('refuses them under another key with CONFIG_INVALID, and reads values stored before sealing', async () => {
    const other = openStore({ path, secretsKey: randomBytes(32) });
    await expect(other.egress.get(tenantId)).rejects.toMatchObject({ code: 'CONFIG_INVALID' });
    // A row written before sealing existed: plain JSON, read as it is.
    other.db
      .prepare('UPDATE tenant_egress SET settings = ? WHERE tenant_id = ?')
      .run('{"allow":[]}', tenantId);
    expect(await other.egress.get(tenantId)).toEqual({ allow: [] });
    other.close();
  });

  it('takes DSH_SECRETS_KEY only as 32 bytes of base64', () => {
    expect(parseSecretsKey(randomBytes(32).toString('base64'))).toHaveLength(32);
    for (const bad of [
      '',
      'short',
      randomBytes(16).toString('base64'),
      `${randomBytes(32).toString('base64')}!`,
    ])
      expect(() => parseSecretsKey(bad)).toThrow(expect.objectContaining({ code: 'CONFIG_INVALID' }));
  });
});
