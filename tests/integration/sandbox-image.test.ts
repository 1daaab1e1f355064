// The sandbox image itself: what an agent finds inside a container started from it.

import { GenericContainer, type StartedTestContainer } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

describe('sandbox image', () => {
  let container: StartedTestContainer;

  beforeAll(async () => {
    container = await new GenericContainer(inject('sandboxImage'))
      .withNetworkMode('none')
      .withCommand(['sleep', 'infinity'])
      .withLabels({ 'dsh.test': 'sandbox-image' })
      .withStartupTimeout(60_000)
      .start();
  });

  afterAll(async () => {
    await container?.stop({ timeout: 1 });
  });

  const sh = async (script: string) => container.exec(['bash', '-c', script]);

  it('runs as the non-root agent user', async () => {
    const result = await sh('id -u; id -un; echo $HOME; pwd');
    expect(result.exitCode).toBe(0);
    expect(result.stdout.split('\n').slice(0, 4)).toEqual(['1000', 'agent', '/home/agent', '/workspace']);
  });

  it('has no network but loopback', async () => {
    const result = await sh("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
    expect(result.stdout.trim().split('\n')).toEqual(['lo']);
  });

  it('has node, python3, ripgrep and git that work', async () => {
    const result = await sh(
      [
        "node -e 'console.log(6*7)'",
        "python3 -c 'print(6*7)'",
        "printf 'needle\\n' > /tmp/f.txt && rg -c needle /tmp/f.txt",
        'cd /tmp && git init -q repo && git -C repo rev-parse --is-inside-work-tree',
      ].join(' && '),
    );
    expect(result.stderr).toBe('');
    expect(result.stdout.split('\n').slice(0, 4)).toEqual(['42', '42', '1', 'true']);
  });

  it('has curl, npm and pip for the egress proxy', async () => {
    const result = await sh(
      "curl --version | head -1 | cut -d' ' -f1; npm --version; pip --version | cut -d' ' -f1",
    );
    expect(result.stdout.split('\n').slice(0, 3)).toEqual(['curl', '10.9.9', 'pip']);
  });

  it('ships sandboxd as a bundle that Node in the image can load', async () => {
    const result = await sh(
      'test -s /opt/sandboxd/sandboxd.cjs && node --check /opt/sandboxd/sandboxd.cjs && echo ok',
    );
    expect(result.stdout.trim()).toBe('ok');
  });

  it("runs sandboxd on its own Node 22 runtime, root's and not writable by the agent; the agent's node stays Debian's", async () => {
    const result = await sh(
      [
        '/opt/sandboxd/runtime/node -v',
        "stat -c '%u %a' /opt/sandboxd/runtime/node",
        '/opt/sandboxd/runtime/node --check /opt/sandboxd/sandboxd.cjs && echo loads',
        'readlink -f "$(command -v node)"',
      ].join(' && '),
    );
    const [version, owner, loads, agentNode] = result.stdout.trim().split('\n');
    expect(version).toMatch(/^v22\./);
    expect(owner).toBe('0 755');
    expect(loads).toBe('loads');
    expect(agentNode).not.toContain('/opt/sandboxd');
  });
});
