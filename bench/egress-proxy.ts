// Sandbox egress throughput: a 64 MiB download by curl inside an agent's sandbox, through sandboxd's
// proxy, the attach stream and the gateway, against the same download by curl on the host, from
// the loopback "internet" of tests/integration/api/internet.ts (127.0.0.2, admitted by the test
// switch and allowlisted). Two paths: plain HTTP (the gateway makes the request: gateway.fetch) and
// HTTPS (a CONNECT tunnel: bytes piped, TLS end to end between curl and the server). Prints medians
// of alternating reps and the ratio (×N: how many times the host's time ours takes).
// Run: DSH_SANDBOX_IMAGE=<tag> node --no-node-snapshot bench/egress-proxy.ts  (`npm run bench egress-proxy`)
// Env: BENCH_REPS (default 5). Everything it makes is labelled dsh.bench=<run> and removed at the end.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Docker from 'dockerode';
import { loadConfig } from '../host/config.ts';
import { createDockerProvider } from '../host/sandbox/docker/index.ts';
import { startServer } from '../host/serve.ts';
import { openStore } from '../host/store/index.ts';
import { startInternet } from '../tests/integration/api/internet.ts';
import { noIsolates } from './lib/no-isolates.ts';
import { benchImage, benchRunId, removeBenchResources } from './lib/sweep.ts';

const MiB = 1024 * 1024;
const SIZE = 64 * MiB;
const REPS = Number(process.env.BENCH_REPS ?? 5);
const image = await benchImage();
const run = benchRunId();

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
};

/** curl on the host; resolves with its own time_total in ms. */
const hostCurl = (args: string[]) =>
  new Promise<number>((resolve, reject) => {
    const child = spawn('curl', [
      '-sS',
      '--fail',
      '--noproxy',
      '*',
      '-o',
      '/dev/null',
      '-w',
      '%{time_total}',
      ...args,
    ]);
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
    });
    child.on('close', (code) =>
      code === 0 ? resolve(Number(out) * 1000) : reject(new Error(`curl exited ${code}`)),
    );
  });

const internet = await startInternet();
const dataDir = mkdtempSync(join(tmpdir(), 'dsh-bench-egress-'));
const caFile = join(dataDir, 'ca.pem');
writeFileSync(caFile, internet.caPem);
const store = openStore({ dataDir });
const config = loadConfig(
  {
    host: '127.0.0.1',
    port: 0,
    dataDir,
    egressTestHosts: [{ ip: '127.0.0.2' }],
    egressBytesPerHour: 2 ** 40,
  },
  {},
);
const providers: Array<{ close(): Promise<void> }> = [];
const server = await startServer(config, {
  sandboxes: (egress) => {
    const provider = createDockerProvider({
      image,
      prefix: 'dshbench',
      instance: `e${run}`,
      labels: { 'dsh.bench': run },
      idleMs: 0,
      egress,
      links: join(dataDir, 'links'),
    });
    providers.push(provider);
    return provider;
  },
  isolates: noIsolates,
  store,
  log: () => {},
});

try {
  const { apiKey } = await store.tenants.createTenant('bench');
  const api = async (method: string, path: string, body: unknown) => {
    const res = await fetch(`${server.url}${path}`, {
      method,
      headers: { Authorization: `Bearer ${apiKey}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    return (await res.json()) as Record<string, unknown>;
  };
  const agent = (await api('POST', '/v1/agents', {})).id as string;
  await api('PUT', '/v1/egress', {
    allow: [{ host: '127.0.0.2', ports: [internet.http.port, internet.https.port] }],
  });
  const bash = async (command: string): Promise<string> => {
    const res = await api('POST', `/v1/agents/${agent}/calls`, {
      calls: [{ id: 'b', name: 'bash', arguments: { command, description: 'bench', timeoutMs: 300_000 } }],
    });
    const result = (res.results as Array<{ ok: boolean; value: { stdout: string; exitCode: number } }>)[0];
    if (!result?.ok || result.value.exitCode !== 0) throw new Error(`bash failed: ${JSON.stringify(res)}`);
    return result.value.stdout;
  };
  await bash(`cat > ca.pem <<'EOF'\n${internet.caPem}EOF`);
  /** curl in the sandbox (through the proxy); its own time_total in ms. */
  const sandboxCurl = async (args: string): Promise<number> =>
    Number(await bash(`curl -sS --fail -o /dev/null -w '%{time_total}' ${args}`)) * 1000;

  console.log(
    `image ${image}; ${SIZE / MiB} MiB; medians of ${REPS} alternating reps; ×N = sandbox / host\n`,
  );
  for (const [what, inside, outside] of [
    [
      'plain HTTP (gateway.fetch)',
      `${internet.http.url}/bytes/${SIZE}`,
      [`${internet.http.url}/bytes/${SIZE}`],
    ],
    [
      'HTTPS (CONNECT tunnel)',
      `--cacert ca.pem ${internet.https.url}/bytes/${SIZE}`,
      ['--cacert', caFile, `${internet.https.url}/bytes/${SIZE}`],
    ],
  ] as const) {
    await sandboxCurl(inside); // warm
    const ours: number[] = [];
    const base: number[] = [];
    for (let i = 0; i < REPS; i++) {
      ours.push(await sandboxCurl(inside));
      base.push(await hostCurl([...outside]));
    }
    const o = median(ours);
    const b = median(base);
    const rate = (ms: number) => ((SIZE / MiB / ms) * 1000).toFixed(0).padStart(5);
    console.log(
      `${what.padEnd(28)} sandbox ${o.toFixed(0).padStart(6)} ms (${rate(o)} MiB/s)   host ${b.toFixed(0).padStart(6)} ms (${rate(b)} MiB/s)   ×${(o / b).toFixed(2)}`,
    );
  }
} finally {
  await server.close();
  for (const p of providers) await p.close().catch(() => {});
  await removeBenchResources(new Docker(), run);
  await internet.close();
  store.close();
  rmSync(dataDir, { recursive: true, force: true });
}
