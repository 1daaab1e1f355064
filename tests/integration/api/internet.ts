// A loopback "internet" for sandbox egress tests and bench/egress-proxy.ts (these machines have no
// other): an HTTP server on 127.0.0.2 (pages, a redirect, a byte source, a tiny npm registry, a
// pip simple index with one wheel, a git repository over dumb HTTP), the same routes over HTTPS
// with a certificate of a test CA of its own (made with the openssl CLI), an "api" host on 127.0.0.4
// (HTTPS and HTTP) that tests give a credential for, and a server on 127.0.0.3 that tests leave
// out of the allowlist. 127.0.0.2 and .3, not .1: the sandbox's
// NO_PROXY sends 127.0.0.1 straight to the container's own loopback. Nothing here reaches beyond
// 127.0.0.0/8. What the servers saw (paths and headers) is kept in `seen`, never echoed back.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo, Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, normalize } from 'node:path';
import { gzipSync } from 'node:zlib';
import tarStream from 'tar-stream';

export const NPM_PACKAGE = 'dsh-tiny';
export const PIP_PACKAGE = 'dshtiny';

export interface Site {
  host: string;
  port: number;
  /** `http://host:port` (or https). */
  url: string;
}

export interface Internet {
  http: Site;
  https: Site;
  /** A host of its own (127.0.0.4) over HTTPS and HTTP: the one tests give a credential for. */
  api: Site;
  apiHttp: Site;
  /** Left out of the allowlist by the tests. */
  other: Site;
  /** The test CA's certificate (PEM): what a client in the sandbox trusts for `https`. */
  caPem: string;
  /** Every request the servers got: path and headers. */
  seen: Array<{ site: string; path: string; headers: IncomingMessage['headers'] }>;
  close(): Promise<void>;
}

const openssl = (dir: string, args: string[]): void => {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
};

/** A test CA and a leaf for `ips` it signed: { caPem, keyPem, certPem }. */
function testCertificates(dir: string, ips: string[]) {
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(dir, [
    'req',
    '-x509',
    ...ec,
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '2',
    '-subj',
    '/CN=dsh test CA',
  ]);
  openssl(dir, ['req', ...ec, '-keyout', 'leaf.key', '-out', 'leaf.csr', '-subj', `/CN=${ips[0]}`]);
  writeFileSync(
    join(dir, 'leaf.ext'),
    `subjectAltName=${ips.map((ip) => `IP:${ip}`).join(',')}\nbasicConstraints=CA:FALSE\n`,
  );
  openssl(dir, [
    'x509',
    '-req',
    '-in',
    'leaf.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'leaf.pem',
    '-days',
    '2',
    '-extfile',
    'leaf.ext',
  ]);
  const read = (f: string) => readFileSync(join(dir, f), 'utf8');
  return { caPem: read('ca.pem'), keyPem: read('leaf.key'), certPem: read('leaf.pem') };
}

/** The npm tarball of a one-file package. */
async function npmTarball(): Promise<Buffer> {
  const pack = tarStream.pack();
  const files: Record<string, string> = {
    'package/package.json': JSON.stringify({ name: NPM_PACKAGE, version: '1.0.0', main: 'index.js' }),
    'package/index.js': "module.exports = 'tiny from the loopback registry';\n",
  };
  for (const [name, text] of Object.entries(files)) pack.entry({ name, mode: 0o644 }, text);
  pack.finalize();
  const parts: Buffer[] = [];
  for await (const chunk of pack as AsyncIterable<Buffer>) parts.push(chunk);
  return gzipSync(Buffer.concat(parts));
}

/** A pure-Python wheel made with the host's python3 (zipfile), or undefined without one. */
function wheel(dir: string): Buffer | undefined {
  const name = `${PIP_PACKAGE}-1.0.0-py3-none-any.whl`;
  const script = `
import zipfile, sys
files = {
  "${PIP_PACKAGE}/__init__.py": "GREETING = 'tiny from the loopback index'\\n",
  "${PIP_PACKAGE}-1.0.0.dist-info/METADATA": "Metadata-Version: 2.1\\nName: ${PIP_PACKAGE}\\nVersion: 1.0.0\\n",
  "${PIP_PACKAGE}-1.0.0.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: dsh\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
files["${PIP_PACKAGE}-1.0.0.dist-info/RECORD"] = "".join(f + ",,\\n" for f in files) + "${PIP_PACKAGE}-1.0.0.dist-info/RECORD,,\\n"
with zipfile.ZipFile(sys.argv[1], "w") as z:
  for f, t in files.items(): z.writestr(f, t)
`;
  try {
    execFileSync('python3', ['-c', script, join(dir, name)], { stdio: 'ignore' });
    return readFileSync(join(dir, name));
  } catch {
    return undefined;
  }
}

/** A bare repository with one commit, ready for dumb HTTP, or undefined without git on the host. */
function gitRepository(dir: string): string | undefined {
  try {
    const work = join(dir, 'work');
    const git = (cwd: string, ...args: string[]) =>
      execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd, stdio: 'ignore' });
    git(dir, 'init', '-q', '-b', 'main', work);
    writeFileSync(join(work, 'README.md'), 'cloned through the egress proxy\n');
    git(work, 'add', '.');
    git(work, 'commit', '-q', '-m', 'one');
    git(dir, 'clone', '-q', '--bare', work, join(dir, 'repo.git'));
    git(join(dir, 'repo.git'), 'update-server-info');
    return join(dir, 'repo.git');
  } catch {
    return undefined;
  }
}

const listen = (server: Server, host: string): Promise<number> =>
  new Promise((resolve) => server.listen(0, host, () => resolve((server.address() as AddressInfo).port)));

export async function startInternet(): Promise<Internet & { pip: boolean; git: boolean }> {
  const dir = mkdtempSync(join(tmpdir(), 'dsh-internet-'));
  const certs = testCertificates(dir, ['127.0.0.2', '127.0.0.4']);
  const tarball = await npmTarball();
  const whl = wheel(dir);
  const repo = gitRepository(dir);
  const megabyte = Buffer.alloc(1024 * 1024, 'x');
  const seen: Internet['seen'] = [];
  let httpUrl = '';
  let otherUrl = '';

  const routes = (site: string) => (req: IncomingMessage, res: ServerResponse) => {
    const path = req.url ?? '/';
    seen.push({ site, path, headers: req.headers });
    const base = `${site === 'https' || site === 'api' ? 'https' : 'http'}://${req.headers.host}`;
    const send = (status: number, body: string | Buffer, type = 'text/plain') => {
      res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    if (path === '/hello') return send(200, `hello from ${site}\n`);
    if (path === '/redirect') {
      res.writeHead(302, { location: `${otherUrl}/landed` });
      return res.end();
    }
    if (path === '/redirect-ok') {
      res.writeHead(302, { location: `${httpUrl}/hello` });
      return res.end();
    }
    const bytes = /^\/bytes\/(\d+)$/.exec(path);
    if (bytes) {
      const total = Number(bytes[1]);
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': total });
      let left = total;
      const pump = (): void => {
        while (left > 0) {
          const n = Math.min(left, megabyte.length);
          left -= n;
          if (!res.write(n === megabyte.length ? megabyte : megabyte.subarray(0, n))) {
            res.once('drain', pump);
            return;
          }
        }
        res.end();
      };
      return pump();
    }
    if (path === `/${NPM_PACKAGE}`) {
      const dist = {
        tarball: `${base}/${NPM_PACKAGE}/-/${NPM_PACKAGE}-1.0.0.tgz`,
        shasum: createHash('sha1').update(tarball).digest('hex'),
        integrity: `sha512-${createHash('sha512').update(tarball).digest('base64')}`,
      };
      const packument = {
        name: NPM_PACKAGE,
        'dist-tags': { latest: '1.0.0' },
        versions: { '1.0.0': { name: NPM_PACKAGE, version: '1.0.0', main: 'index.js', dist } },
      };
      return send(200, JSON.stringify(packument), 'application/json');
    }
    if (path === `/${NPM_PACKAGE}/-/${NPM_PACKAGE}-1.0.0.tgz`)
      return send(200, tarball, 'application/octet-stream');
    if (whl && path === `/simple/${PIP_PACKAGE}/`) {
      const file = `${PIP_PACKAGE}-1.0.0-py3-none-any.whl`;
      const sha = createHash('sha256').update(whl).digest('hex');
      return send(
        200,
        `<!DOCTYPE html><html><body><a href="/files/${file}#sha256=${sha}">${file}</a></body></html>`,
        'text/html',
      );
    }
    if (whl && path.startsWith('/files/')) return send(200, whl, 'application/octet-stream');
    if (repo && path.startsWith('/git/repo.git/')) {
      const rel = normalize(decodeURIComponent(path.slice('/git/repo.git/'.length).split('?')[0] ?? ''));
      const file = join(repo, rel);
      if (!rel.startsWith('..') && file.startsWith(repo) && existsSync(file) && statSync(file).isFile())
        return send(200, readFileSync(file), 'application/octet-stream');
    }
    return send(404, 'not found\n');
  };

  const http = createHttpServer(routes('http'));
  const https = createHttpsServer({ key: certs.keyPem, cert: certs.certPem }, routes('https'));
  const other = createHttpServer(routes('other'));
  const api = createHttpsServer({ key: certs.keyPem, cert: certs.certPem }, routes('api'));
  const apiHttp = createHttpServer(routes('api-http'));
  const site = (host: string, port: number, scheme = 'http'): Site => ({
    host,
    port,
    url: `${scheme}://${host}:${port}`,
  });
  const httpSite = site('127.0.0.2', await listen(http, '127.0.0.2'));
  const httpsSite = site('127.0.0.2', await listen(https, '127.0.0.2'), 'https');
  const otherSite = site('127.0.0.3', await listen(other, '127.0.0.3'));
  const apiSite = site('127.0.0.4', await listen(api, '127.0.0.4'), 'https');
  const apiHttpSite = site('127.0.0.4', await listen(apiHttp, '127.0.0.4'));
  httpUrl = httpSite.url;
  otherUrl = otherSite.url;
  return {
    http: httpSite,
    https: httpsSite,
    other: otherSite,
    api: apiSite,
    apiHttp: apiHttpSite,
    caPem: certs.caPem,
    seen,
    pip: whl !== undefined,
    git: repo !== undefined,
    async close() {
      for (const s of [http, https, other, api, apiHttp]) {
        s.closeAllConnections?.();
        await new Promise<void>((resolve) => s.close(() => resolve()));
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
