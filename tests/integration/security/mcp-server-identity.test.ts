// A stdio MCP server's environment is not the agent's to read (issue 28). A server's `env` carries
// the tenant's tokens; the server ran as the agent's uid and gid, so the agent's own `bash` read
// them from /proc/<pid>/environ. Servers now run with the agent's uid (the workspace is theirs
// alike) but a group of their own, and /proc/<pid>/environ, mem and fd/* need the reader's uid and
// gid both to match: refused to the agent. All through the public API, in a real container.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type Harness, startHarness, text } from './harness.ts';

const TINY = readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'mcp', 'tiny-server.mjs'));
const TOKEN = 'tok-3f9c1e7a5b2d4c6e8f0a';

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.close();
});

it("the agent's bash cannot read its stdio MCP server's environment, and both still share the workspace", async () => {
  const agent = await h.agent(h.keyA);
  expect((await h.http(h.keyA, 'PUT', `/v1/agents/${agent}/files?path=tiny.mjs`, TINY)).status).toBe(200);
  const registered = await h.http(h.keyA, 'POST', `/v1/agents/${agent}/mcp-servers`, {
    name: 'tiny',
    command: ['node', 'tiny.mjs'],
    env: { TINY_TOKEN: TOKEN },
  });
  expect(registered.status).toBe(201);
  const call = async (tool: string, args: Record<string, unknown> = {}) =>
    (await h.calls(h.keyA, agent, [['c', `mcp__tiny__${tool}`, args]]))[0];

  // The server has its environment.
  expect(text(await call('env')).split(',')).toContain('TINY_TOKEN');
  const pid = Number(text(await call('pid')));
  expect(pid).toBeGreaterThan(1);

  const probe = await h.bash(
    h.keyA,
    agent,
    [
      `test -d /proc/${pid} && echo running`,
      `cat /proc/${pid}/environ >/dev/null 2>&1 && echo ENVIRON || echo environ-refused`,
      `head -c 1 /proc/${pid}/mem >/dev/null 2>&1 && echo MEM || echo mem-refused`,
      // (the fd numbers are listed by plain file permission; what they are, or opening one, is refused)
      `readlink /proc/${pid}/fd/1 >/dev/null 2>&1 && echo FD || echo fd-refused`,
      `(echo x > /proc/${pid}/fd/0) 2>/dev/null && echo STDIN || echo stdin-refused`,
      // Not from any process of the sandbox either.
      `grep -al ${TOKEN.slice(0, 12)} /proc/[0-9]*/environ 2>/dev/null | wc -l`,
      'id -u; id -G',
    ].join('; '),
  );
  expect(text(probe).trim().split('\n')).toEqual([
    'running',
    'environ-refused',
    'mem-refused',
    'fd-refused',
    'stdin-refused',
    '0',
    '1000',
    '1000',
  ]);

  // It runs as the agent's uid in a group of its own.
  expect(JSON.parse(text(await call('whoami')))).toMatchObject({ uid: 1000, gid: 1001 });
  // The workspace is shared: a file the server makes is the agent's to remove (and here, `poison`
  // leaves one that fails the server's next start until the agent removes it).
  expect((await call('poison')).ok).toBe(false);
  const file = await h.bash(
    h.keyA,
    agent,
    'stat -c %u:%g tiny-server.poisoned && rm tiny-server.poisoned && echo removed',
  );
  expect(text(file).trim()).toBe('1000:1001\nremoved');
  expect(text(await call('echo', { message: 'back' }))).toBe('echo: back');
});
