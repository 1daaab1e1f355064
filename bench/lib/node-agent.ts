// A node agent (`host/cli.ts node`) on this engine for a bench: the bench's certificates in `pki`
// (bench.pem / bench.key, ca.pem), its own data folder, loopback on a free port; the URL it
// serves at once it says so. `env` adds or replaces settings (e.g. DSH_POOL_SIZE, DSH_IDLE_POLL).
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

export const startNodeAgent = (
  pki: string,
  dataDir: string,
  image: string,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string }> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--no-node-snapshot', 'host/cli.ts', 'node'], {
      env: {
        ...process.env,
        DSH_NODE_LISTEN: '127.0.0.1:0',
        DSH_NODE_CERT: join(pki, 'bench.pem'),
        DSH_NODE_KEY: join(pki, 'bench.key'),
        DSH_NODE_CA: join(pki, 'ca.pem'),
        DSH_DATA_DIR: dataDir,
        DSH_SANDBOX_IMAGE: image,
        DSH_DISK_QUOTA: 'off',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout?.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /^listening (https:\/\/\S+)$/m.exec(out);
      if (m?.[1]) resolve({ child, url: m[1] });
    });
    child.once('exit', (code) => reject(new Error(`the node agent exited (${code}):\n${out}`)));
  });
