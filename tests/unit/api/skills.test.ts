// Issue 15, `skill(name)` and a tenant's skill catalog through the public HTTP API: packages
// uploaded as tars (PUT /v1/skills/:name), listed, read with their files and deleted, each tenant
// apart; hostile archives and bad front matter refused; the `skill` tool's description lists the
// tenant's skills (and changes with the catalog, with a `tools.change` event), loading one returns
// its instructions and puts its files where the `read` tool finds them, an unknown name says which
// skills there are; an MCP client hears of a catalog change.
import { mkdtempSync, rmSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { type ServerType, serve } from '@hono/node-server';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { pack } from 'tar-stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assembleAgents } from '../../../host/agents/assemble.ts';
import type { IsolateHost } from '../../../host/isolates/index.ts';
import { createMemoryProvider } from '../../../host/sandbox/memory/provider.ts';
import { openStore } from '../../../host/store/index.ts';
import { until } from '../../helpers/until.ts';
import { startService } from '../session/helpers.ts';

import type { Loose } from './harness.ts';

const SKILL_MD = `---
name: systematic-debugging
description: "Find the cause of a bug: reproduce, bisect, then fix; use when a test fails for no clear reason."
license: MIT
---
# Systematic debugging

1. Reproduce the failure.
2. Read reference.md before bisecting.
`;

type Entry = {
  name: string;
  mode?: number;
  body?: string | Buffer;
  type?: 'file' | 'directory' | 'symlink';
  linkname?: string;
};

const tarOf = async (entries: Entry[]): Promise<Buffer> => {
  const p = pack();
  for (const { body, ...header } of entries) p.entry(header, body ?? '');
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const chunk of Readable.from(p)) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

const debuggingTar = (top = '') =>
  tarOf([
    { name: `${top}SKILL.md`, body: SKILL_MD },
    { name: `${top}reference.md`, body: 'Bisect with git bisect run.\n' },
    { name: `${top}scripts/repro.sh`, body: '#!/bin/sh\necho repro\n', mode: 0o755 },
  ]);

let service: ReturnType<typeof startService>;
let keyA: string;
let keyB: string;
beforeEach(async () => {
  service = startService();
  keyA = (await service.store.tenants.createTenant('a')).apiKey;
  keyB = (await service.store.tenants.createTenant('b')).apiKey;
});
afterEach(async () => {
  await service.stop();
});

const request = async (key: string, method: string, path: string, body?: Buffer | object) => {
  const init: RequestInit = { method, headers: { Authorization: `Bearer ${key}` } };
  if (Buffer.isBuffer(body)) {
    init.body = body;
    (init.headers as Record<string, string>)['Content-Type'] = 'application/x-tar';
  } else if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['Content-Type'] = 'application/json';
  }
  const res = await service.app.request(path, init);
  // Every answer here is JSON but a 204's.
  return { status: res.status, json: res.status === 204 ? undefined : ((await res.json()) as Loose) };
};

const put = async (key: string, name: string, tar: Buffer | Promise<Buffer>) =>
  request(key, 'PUT', `/v1/skills/${name}`, await tar);

const createAgent = async (key: string, body: object = {}): Promise<string> => {
  const res = await request(key, 'POST', '/v1/agents', body);
  expect(res.status).toBe(201);
  return res.json.id;
};

const call = async (key: string, agentId: string, name: string, args: unknown): Promise<Loose> => {
  const res = await request(key, 'POST', `/v1/agents/${agentId}/calls`, {
    calls: [{ id: `c-${name}`, name, arguments: args }],
  });
  expect(res.status).toBe(200);
  return res.json.results[0];
};

const skillSchema = async (key: string, agentId: string): Promise<Loose> =>
  (await request(key, 'GET', `/v1/agents/${agentId}/tools`)).json.tools.find(
    (t: Loose) => t.name === 'skill',
  );

describe('skill catalog over HTTP', () => {
  it('uploads, lists, reads with files, replaces and deletes a package', async () => {
    const created = await put(keyA, 'systematic-debugging', debuggingTar());
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      name: 'systematic-debugging',
      description: expect.stringMatching(/^Find the cause of a bug/),
      files: [
        { path: 'SKILL.md', bytes: Buffer.byteLength(SKILL_MD) },
        { path: 'reference.md', bytes: 28 },
        { path: 'scripts/repro.sh', bytes: 21 },
      ],
    });
    const listed = await request(keyA, 'GET', '/v1/skills');
    expect(listed.json.skills.map((s: Loose) => s.name)).toEqual(['systematic-debugging']);
    expect(listed.json.skills[0]).not.toHaveProperty('files');
    const got = await request(keyA, 'GET', '/v1/skills/systematic-debugging');
    expect(got.status).toBe(200);
    expect(got.json.files).toHaveLength(3);

    // A folder-rooted package (tar -cf x.tar systematic-debugging/) replaces it.
    const replaced = await put(keyA, 'systematic-debugging', debuggingTar('systematic-debugging/'));
    expect(replaced.status).toBe(200);
    // So does one made with tar -cf - -C systematic-debugging . (names start with ./).
    expect((await put(keyA, 'systematic-debugging', debuggingTar('./'))).json.files).toHaveLength(3);
    expect(replaced.json.files.map((f: Loose) => f.path)).toEqual([
      'SKILL.md',
      'reference.md',
      'scripts/repro.sh',
    ]);

    expect((await request(keyA, 'DELETE', '/v1/skills/systematic-debugging')).status).toBe(204);
    expect((await request(keyA, 'GET', '/v1/skills/systematic-debugging')).json.error.code).toBe('NOT_FOUND');
    expect((await request(keyA, 'DELETE', '/v1/skills/systematic-debugging')).status).toBe(404);
    expect((await request(keyA, 'GET', '/v1/skills')).json.skills).toEqual([]);
  });

  it("keeps tenants apart: another tenant's skill is 404 and never listed", async () => {
    expect((await put(keyA, 'systematic-debugging', debuggingTar())).status).toBe(201);
    expect((await request(keyB, 'GET', '/v1/skills')).json.skills).toEqual([]);
    expect((await request(keyB, 'GET', '/v1/skills/systematic-debugging')).status).toBe(404);
    expect((await request(keyB, 'DELETE', '/v1/skills/systematic-debugging')).status).toBe(404);
    expect((await request(keyA, 'GET', '/v1/skills/systematic-debugging')).status).toBe(200);
    expect((await request('not-a-key', 'GET', '/v1/skills')).status).toBe(401);
  });

  it('refuses hostile archives and keeps nothing of them', async () => {
    const hostile: Entry[][] = [
      [
        { name: 'SKILL.md', body: SKILL_MD },
        { name: '../escape.md', body: 'x' },
      ],
      [
        { name: 'SKILL.md', body: SKILL_MD },
        { name: '/etc/passwd', body: 'x' },
      ],
      [
        { name: 'SKILL.md', body: SKILL_MD },
        { name: 'link', type: 'symlink', linkname: '/etc/passwd' },
      ],
    ];
    for (const entries of hostile) {
      const res = await put(keyA, 'systematic-debugging', tarOf(entries));
      expect(res.status, JSON.stringify(entries[1])).toBe(400);
      expect(res.json.error.code).toBe('ARCHIVE_REJECTED');
    }
    const notTar = await request(
      keyA,
      'PUT',
      '/v1/skills/systematic-debugging',
      Buffer.from('x'.repeat(2000)),
    );
    expect(notTar.json.error.code).toBe('ARCHIVE_REJECTED');
    const tooMany = await put(
      keyA,
      'systematic-debugging',
      tarOf([
        { name: 'SKILL.md', body: SKILL_MD },
        ...Array.from({ length: 600 }, (_, i) => ({ name: `f${i}.txt`, body: 'x' })),
      ]),
    );
    expect(tooMany.status).toBe(400);
    const tooLarge = await put(
      keyA,
      'systematic-debugging',
      tarOf([
        { name: 'SKILL.md', body: SKILL_MD },
        { name: 'big.bin', body: Buffer.alloc(service.skills.limits.maxBytes + 1) },
      ]),
    );
    expect(tooLarge.status).toBe(413);
    expect((await request(keyA, 'GET', '/v1/skills')).json.skills).toEqual([]);
  });

  it('refuses bad names and bad front matter with a message that says what to fix', async () => {
    const bad = async (name: string, skillMd: string | undefined) => {
      const entries: Entry[] = [{ name: 'notes.md', body: 'x' }];
      if (skillMd !== undefined) entries.push({ name: 'SKILL.md', body: skillMd });
      const res = await put(keyA, name, tarOf(entries));
      expect(res.status, skillMd).toBe(400);
      expect(res.json.error.code).toBe('INVALID_ARGUMENTS');
      return res.json.error.message as string;
    };
    expect(await bad('Bad_Name', SKILL_MD)).toMatch(/lowercase letters, digits and hyphens/);
    expect(await bad('a'.repeat(65), SKILL_MD)).toMatch(/not valid/);
    expect(await bad('systematic-debugging', undefined)).toMatch(/no SKILL\.md/);
    expect(await bad('systematic-debugging', '# no front matter\n')).toMatch(/front matter/);
    expect(await bad('systematic-debugging', '---\nname: [unclosed\n---\n')).toMatch(/not valid YAML/);
    expect(await bad('systematic-debugging', '---\ndescription: d\n---\n')).toMatch(/no name/);
    expect(await bad('x', '---\nname: x\ndescription: ""\n---\n')).toMatch(/no description/);
    expect(await bad('x', `---\nname: x\ndescription: ${'d'.repeat(1025)}\n---\n`)).toMatch(/more than 1024/);
    expect(await bad('other', SKILL_MD)).toMatch(
      /names it systematic-debugging, but it was uploaded as other/,
    );
    expect(await bad('x', '---\nname: X Y\ndescription: d\n---\n')).toMatch(/is not 1 to 64/);
    expect(await bad('x', '---\n- a\n- b\n---\n')).toMatch(/not a mapping/);
    expect((await request(keyA, 'GET', '/v1/skills')).json.skills).toEqual([]);
  });

  it('is described in /openapi.json', async () => {
    const doc = (await service.app.request('/openapi.json')).json() as Promise<Loose>;
    const paths = (await doc).paths;
    expect(Object.keys(paths['/v1/skills/{name}'])).toEqual(expect.arrayContaining(['get', 'put', 'delete']));
    expect(paths['/v1/skills'].get.operationId).toBe('listSkills');
  });
});

describe('the skill tool', () => {
  it("lists the tenant's skills in its description, refreshed (with tools.change) when the catalog changes", async () => {
    const agentId = await createAgent(keyA);
    expect((await skillSchema(keyA, agentId)).description).toMatch(/No skills are installed/);
    expect((await skillSchema(keyA, agentId)).parameters).toMatchObject({
      type: 'object',
      properties: { name: { type: 'string' } },
      required: ['name'],
    });
    await put(keyA, 'systematic-debugging', debuggingTar());
    const description = (await skillSchema(keyA, agentId)).description;
    expect(description).toContain('- systematic-debugging: Find the cause of a bug: reproduce, bisect');
    const events = (await request(keyA, 'GET', `/v1/agents/${agentId}/events?after=0`)).json
      .events as Loose[];
    expect(events.filter((e) => e.type === 'tools.change').at(-1)?.data).toEqual({
      added: [],
      removed: [],
      changed: ['skill'],
    });
    // Tenant b's agent lists none of tenant a's skills.
    const other = await createAgent(keyB);
    expect((await skillSchema(keyB, other)).description).not.toContain('systematic-debugging');
    await request(keyA, 'DELETE', '/v1/skills/systematic-debugging');
    expect((await skillSchema(keyA, agentId)).description).toMatch(/No skills are installed/);
  });

  it('returns the instructions and puts the files where read finds them, the same on a second load', async () => {
    await put(keyA, 'systematic-debugging', debuggingTar());
    const agentId = await createAgent(keyA);
    for (let i = 0; i < 2; i++) {
      const loaded = await call(keyA, agentId, 'skill', { name: 'systematic-debugging' }); // seed 000's example
      expect(loaded.ok).toBe(true);
      expect(loaded.value).toMatchObject({
        name: 'systematic-debugging',
        path: expect.stringMatching(/\/\.skills\/systematic-debugging$/),
        files: ['SKILL.md', 'reference.md', 'scripts/repro.sh'],
        instructions: expect.stringMatching(/^# Systematic debugging\n\n1\. Reproduce the failure\./),
      });
      expect(loaded.content[0].text).toContain('# Systematic debugging');
      expect(loaded.content[0].text).toContain(`${loaded.value.path}/`);
    }
    const read = await call(keyA, agentId, 'read', {
      file_path: '.skills/systematic-debugging/reference.md',
    });
    expect(read.ok).toBe(true);
    expect(read.content[0].text).toContain('Bisect with git bisect run.');
    // A script keeps its mode, so the agent can run it.
    const agent = await service.agents.get((await service.store.tenants.verifyKey(keyA))?.id ?? '', agentId);
    const sandbox = await service.agents.sandbox(agent);
    expect((await sandbox.fs.stat('.skills/systematic-debugging/scripts/repro.sh')).mode & 0o777).toBe(0o755);
  });

  it('answers an unknown name with the skills there are', async () => {
    const agentId = await createAgent(keyA);
    const none = await call(keyA, agentId, 'skill', { name: 'systematic-debugging' });
    expect(none.ok).toBe(false);
    expect(none.error).toMatchObject({ code: 'NOT_FOUND', message: expect.stringMatching(/has no skills/) });
    await put(keyA, 'systematic-debugging', debuggingTar());
    const unknown = await call(keyA, agentId, 'skill', { name: 'no-such-skill' });
    expect(unknown.error.code).toBe('NOT_FOUND');
    expect(unknown.error.message).toContain('Available skills:\n- systematic-debugging: Find the cause');
    // Another tenant's skill is unknown here too.
    const other = await createAgent(keyB);
    expect((await call(keyB, other, 'skill', { name: 'systematic-debugging' })).error.code).toBe('NOT_FOUND');
  });

  it('follows the preset and the agent restrictions', async () => {
    await put(keyA, 'systematic-debugging', debuggingTar());
    expect(await skillSchema(keyA, await createAgent(keyA, { preset: 'minimal' }))).toBeUndefined();
    const restricted = await createAgent(keyA, { restrict: { deny: ['skill'] } });
    expect(await skillSchema(keyA, restricted)).toBeUndefined();
    expect((await call(keyA, restricted, 'skill', { name: 'systematic-debugging' })).ok).toBe(false);
  });
});

describe('the skill tool in other presets', () => {
  it('is a tools.* binding in code mode, documented with the skills, and the creator preset has it', async () => {
    // Describing tools runs no program: an isolate host that is never called installs code mode.
    const isolates = {
      limits: {},
      run: () => Promise.reject(new Error('no program runs in this test')),
      workerPids: () => [],
      close: async () => {},
    } as unknown as IsolateHost;
    const store = openStore({ path: ':memory:' });
    const { agents, skills } = assembleAgents({ store, sandboxes: createMemoryProvider(), isolates });
    try {
      const tenant = (await store.tenants.createTenant('t')).id;
      await skills?.upload(tenant, 'systematic-debugging', Readable.from(await debuggingTar()));
      const coder = await agents.create(tenant, { preset: 'code' });
      const [runCode, ...rest] = (await agents.tools(coder)).tools;
      expect(rest).toEqual([]);
      expect(runCode?.name).toBe('run_code');
      expect(runCode?.description).toMatch(/\bskill\(/);
      expect(runCode?.description).toContain('systematic-debugging: Find the cause of a bug');
      const creator = await agents.create(tenant, { preset: 'creator' });
      const tools = (await agents.tools(creator)).tools;
      expect(tools.find((t) => t.name === 'skill')?.description).toContain('- systematic-debugging:');
    } finally {
      await agents.close(0);
      store.close();
    }
  });
});

describe('durability', () => {
  it('keeps the catalog across a restart of the service on the same database', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'dsh-skills-'));
    try {
      const first = startService({ path: join(dir, 'store.db') });
      const tenant = await first.store.tenants.createTenant('t');
      await first.skills.upload(tenant.id, 'systematic-debugging', Readable.from(await debuggingTar()));
      await first.stop();
      const second = startService({ path: join(dir, 'store.db') });
      try {
        const agent = await second.agents.create(tenant.id, {});
        const loaded = await second.call(agent, 'skill', { name: 'systematic-debugging' });
        expect(loaded.value).toMatchObject({ files: ['SKILL.md', 'reference.md', 'scripts/repro.sh'] });
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('MCP clients', () => {
  it('hear tools/list_changed when the catalog changes and list the new description', async () => {
    const server = await new Promise<ServerType>((resolve) => {
      const s = serve({ fetch: service.app.fetch, hostname: '127.0.0.1', port: 0 }, () => resolve(s));
    });
    const client = new Client({ name: 'dsh-sandbox-test', version: '1.0.0' });
    try {
      const agentId = await createAgent(keyA);
      let changes = 0;
      client.setNotificationHandler('notifications/tools/list_changed', () => {
        changes++;
      });
      const url = new URL(
        `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/agents/${agentId}/mcp`,
      );
      await client.connect(
        new StreamableHTTPClientTransport(url, {
          requestInit: { headers: { Authorization: `Bearer ${keyA}` } },
        }),
      );
      // The notification stream is a GET the client opens on its own after initialize: upload
      // (the same package, idempotently) until a notification arrives rather than guess when.
      await until(
        async () => {
          expect((await put(keyA, 'systematic-debugging', debuggingTar())).status).toBeLessThan(300);
          return until(() => changes > 0, { timeoutMs: 500 }).catch(() => false);
        },
        { what: 'tools/list_changed' },
      );
      const listed = (await client.listTools()).tools.find((t) => t.name === 'skill');
      expect(listed?.description).toContain('- systematic-debugging: Find the cause of a bug');
    } finally {
      await client.close().catch(() => undefined);
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
