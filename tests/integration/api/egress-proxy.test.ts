// Sandbox egress through sandboxd's proxy on the composition `serve` runs, with a real container
// (issue 19): the agent's commands get HTTP(S)_PROXY pointing at sandboxd on the container's
// loopback, every connection is tunnelled over the attach stream to the gateway, and the loopback
// "internet" of ./internet.ts stands in for the world (admitted by the test switch; the tenant's
// allowlist still decides). curl, npm, pip and git reach an allowlisted host; anything else gets a
// clear 403 naming the reason; a redirect to a refused host is refused; a credential the tenant set
// reaches the upstream over TLS (never plain HTTP) but never the sandbox; the container still has
// only `lo`; every connection is an audit event in the agent's log.
import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Running } from '../../../host/serve.ts';
import type { Loose } from '../../unit/api/harness.ts';
import { type Internet, NPM_PACKAGE, PIP_PACKAGE, startInternet } from './internet.ts';
import { json, served } from './served.ts';

const SECRET = 'Bearer upstream-secret-9d41c2';
// The gateway verifies the upstreams it connects to for intercepted HTTPS against the test CA.
const caFile = join(tmpdir(), `dsh-egress-proxy-ca-${process.pid}.pem`);
let internet: Internet & { pip: boolean; git: boolean };
beforeAll(async () => {
  internet = await startInternet();
  writeFileSync(caFile, internet.caPem);
});
afterAll(async () => {
  await internet?.close();
  rmSync(caFile, { force: true });
});

const service = served('egress-proxy', {
  egressTestHosts: [{ ip: '127.0.0.2' }, { ip: '127.0.0.3' }, { ip: '127.0.0.4' }],
  egressCaFile: caFile,
});

let seq = 0;
const bash = async (server: Running, key: string, agentId: string, command: string) => {
  const res = await json(server, key, 'POST', `/v1/agents/${agentId}/calls`, {
    calls: [
      { id: `b${++seq}`, name: 'bash', arguments: { command, description: 'egress', timeoutMs: 120_000 } },
    ],
  });
  expect(res.status).toBe(200);
  const result = res.json.results[0] as Loose;
  expect(result.ok, JSON.stringify(result)).toBe(true);
  return { stdout: String(result.value.stdout), exitCode: result.value.exitCode as number | null };
};

it('tunnels curl, npm, pip and git to allowlisted hosts only, with credentials kept out of the sandbox', async () => {
  const server = await service.start();
  const key = (await server.store.tenants.createTenant('egress-proxy')).apiKey;
  const agentId = (await json(server, key, 'POST', '/v1/agents', {})).json.id as string;
  const sh = (command: string) => bash(server, key, agentId, command);
  const { http, https, other, api, apiHttp } = internet;

  // The variables every command gets, and a container that still has only a loopback interface.
  const env = await sh('env | grep -i _proxy= | sort; ls /sys/class/net');
  expect(env.stdout).toContain('HTTP_PROXY=http://127.0.0.1:3128');
  expect(env.stdout).toContain('https_proxy=http://127.0.0.1:3128');
  expect(env.stdout).toContain('NO_PROXY=localhost,127.0.0.1,::1');
  expect(env.stdout.trim().split('\n').at(-1)).toBe('lo');

  // Default deny: no allowlist yet, a clear refusal (not a hang, not a bare connection error).
  const before = await sh(`curl -sS -D - ${http.url}/hello`);
  expect(before.stdout).toMatch(/^HTTP\/1\.1 403/);
  expect(before.stdout).toMatch(/x-dsh-egress: denied; reason="no allowlist"/i);
  expect(before.stdout).toContain('PUT /v1/egress');

  const put = await json(server, key, 'PUT', '/v1/egress', {
    allow: [
      { host: '127.0.0.2', ports: [http.port, https.port] },
      { host: '127.0.0.4', ports: [api.port, apiHttp.port] },
    ],
    credentials: [{ name: 'api', host: '127.0.0.4', header: 'Authorization', value: SECRET }],
  });
  expect(put.status).toBe(200);
  await json(server, key, 'POST', `/v1/agents/${agentId}/calls`, {
    calls: [{ id: 'ca', name: 'write', arguments: { file_path: 'test-ca.pem', content: internet.caPem } }],
  });

  // Plain HTTP and HTTPS (CONNECT, the client's own TLS to the upstream) to the allowlisted host.
  expect((await sh(`curl -sS --fail ${http.url}/hello`)).stdout).toBe('hello from http\n');
  expect((await sh(`curl -sS --fail --cacert test-ca.pem ${https.url}/hello`)).stdout).toBe(
    'hello from https\n',
  );

  // Another host: 403 with the gateway's reason, for HTTP and for a CONNECT tunnel alike.
  const refused = await sh(`curl -sS -D - ${other.url}/hello`);
  expect(refused.stdout).toMatch(/^HTTP\/1\.1 403/);
  expect(refused.stdout).toMatch(/x-dsh-egress: denied/i);
  expect(refused.stdout).toContain('127.0.0.3');
  const tunnel = await sh(
    `curl -sS -o /dev/null -w '%{http_connect}' https://${other.host}:${other.port}/ 2>&1`,
  );
  expect(tunnel.stdout).toContain('403');
  // A redirect to a refused host: the client follows it through the proxy, which refuses that hop.
  const redirected = await sh(
    `curl -sS -L -o /dev/null -w '%{http_code} %{num_redirects}' ${http.url}/redirect`,
  );
  expect(redirected.stdout).toBe('403 1');
  expect(internet.seen.some((s) => s.site === 'other')).toBe(false);

  // The credential reaches the upstream, added by the gateway, over HTTPS, which the gateway
  // intercepts for this host only (a leaf of the tenant's CA, which the sandbox trusts through
  // SSL_CERT_FILE and friends; the upstream's own certificate verified by the gateway). Plain HTTP
  // to the same host goes without it (the credential does not say allowInsecure).
  internet.seen.length = 0;
  await sh(`curl -sS --fail ${apiHttp.url}/hello > fetched.txt`);
  expect(internet.seen.find((s) => s.site === 'api-http')?.headers).not.toHaveProperty('authorization');
  const intercepted = await sh(`curl -sS --fail -v ${api.url}/hello 2>&1`);
  expect(intercepted.stdout).toContain('hello from api');
  expect(intercepted.stdout).toMatch(/issuer: .*dsh-sandbox egress CA/);
  expect(intercepted.stdout).toMatch(/subjectAltName: host "127\.0\.0\.4" matched/);
  expect(internet.seen.find((s) => s.site === 'api')?.headers.authorization).toBe(SECRET);
  const trust = await sh(
    'env | grep -E "^(SSL_CERT_FILE|NODE_EXTRA_CA_CERTS|REQUESTS_CA_BUNDLE|PIP_CERT|GIT_SSL_CAINFO|CURL_CA_BUNDLE)=" | wc -l',
  );
  expect(trust.stdout.trim()).toBe('6');
  // (The needle is split so that the command line `ps` shows does not hold it.)
  const inside = await sh(
    'env; ps -eo args; cat fetched.txt; grep -r "upstream-""secret" /workspace /tmp 2>/dev/null; true',
  );
  expect(inside.stdout).not.toContain('upstream-secret');

  // npm from a loopback registry: installs from the allowlisted host, a clear failure from another.
  const npm = await sh(
    `npm install --no-audit --no-fund --registry ${http.url}/ ${NPM_PACKAGE} >/dev/null 2>&1; node -p "require('${NPM_PACKAGE}')"`,
  );
  expect(npm.stdout).toContain('tiny from the loopback registry');
  const npmRefused = await sh(
    `npm install --no-audit --no-fund --fetch-retries=0 --registry ${other.url}/ ${NPM_PACKAGE} 2>&1; echo "exit $?"`,
  );
  expect(npmRefused.stdout).toMatch(/403/);
  expect(npmRefused.stdout).not.toContain('exit 0');

  // pip from the intercepted HTTPS index: Python trusts the tenant's CA through PIP_CERT.
  if (internet.pip) {
    const pip = await sh(
      `pip install -q --target pylib --index-url ${api.url}/simple/ ${PIP_PACKAGE} 2>&1; PYTHONPATH=pylib python3 -c 'import ${PIP_PACKAGE}; print(${PIP_PACKAGE}.GREETING)'`,
    );
    expect(pip.stdout).toContain('tiny from the loopback index');
  }
  if (internet.git) {
    const git = await sh(`git clone -q ${http.url}/git/repo.git cloned 2>&1; cat cloned/README.md`);
    expect(git.stdout).toContain('cloned through the egress proxy');
  }

  // Every connection is an audit event in the agent's log: allowed ones with bytes, refused ones with why.
  const audit = (await server.store.events.list(agentId))
    .filter((e) => e.type === 'egress' && (e.data as Loose).via === 'proxy')
    .map((e) => e.data as Loose);
  expect(audit.some((a) => a.decision === 'allow' && a.host === '127.0.0.2' && a.bytesIn > 0)).toBe(true);
  expect(audit.some((a) => a.decision === 'allow' && a.port === https.port)).toBe(true);
  expect(audit.some((a) => a.reason === 'intercepted' && a.port === api.port)).toBe(true);
  expect(audit.some((a) => a.url === `${api.url}/hello` && a.credentials?.[0] === 'api')).toBe(true);
  expect(audit.some((a) => a.decision === 'deny' && a.host === '127.0.0.3')).toBe(true);
  expect(audit.some((a) => a.decision === 'deny' && a.reason === 'no allowlist')).toBe(true);
  expect(JSON.stringify(audit)).not.toContain('upstream-secret');
});

it("trusts the tenant's CA from an agent's very first command: its HTTPS to a credentialed host goes through at once", async () => {
  // The sandbox is handed over, and the tenant's CA (made at the tenant's first use) sent to
  // sandboxd, at the agent's first call: that call's command must not start before the bundle
  // holds the CA, or its TLS to an intercepted host fails. Each round is a new tenant (its CA made
  // then) and a new agent whose first call is the HTTPS request.
  const server = await service.start();
  const { api } = internet;
  for (let round = 0; round < 3; round++) {
    const key = (await server.store.tenants.createTenant(`egress-first-${round}`)).apiKey;
    const put = await json(server, key, 'PUT', '/v1/egress', {
      allow: [{ host: '127.0.0.4', ports: [api.port] }],
      credentials: [{ name: 'api', host: '127.0.0.4', header: 'Authorization', value: SECRET }],
    });
    expect(put.status).toBe(200);
    const agentId = (await json(server, key, 'POST', '/v1/agents', {})).json.id as string;
    const first = await bash(server, key, agentId, `curl -sS ${api.url}/hello 2>&1`);
    expect(first.stdout, `round ${round}`).toContain('hello from api');
  }
});

it("has the tenant's CA in the bundle before an agent's very first command starts", async () => {
  // What a program that loads its trust store when it starts (Python's ssl, Node's
  // NODE_EXTRA_CA_CERTS, pip) sees: the bundle as the command found it, read at once. The CA of a
  // new tenant is made at the agent's first call, beside that call: the call waits for it to be
  // sent to sandboxd (egress/proxy attach's `trusted`), and sandboxd takes it before the command.
  const server = await service.start();
  for (let round = 0; round < 3; round++) {
    const key = (await server.store.tenants.createTenant(`egress-bundle-${round}`)).apiKey;
    const agentId = (await json(server, key, 'POST', '/v1/agents', {})).json.id as string;
    const first = await bash(
      server,
      key,
      agentId,
      'grep -c "dsh-sandbox egress interception CA" "$SSL_CERT_FILE" "$NODE_EXTRA_CA_CERTS"',
    );
    expect(first.stdout.trim().split('\n'), `round ${round}`).toEqual([
      expect.stringMatching(/:1$/),
      expect.stringMatching(/:1$/),
    ]);
  }
});
