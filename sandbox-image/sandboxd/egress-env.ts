// sandboxd's egress environment: the proxy variables every process of the agent gets (proxyEnv,
// read by exec.ts childEnv) and the CA bundle every TLS client of the agent is pointed at.
// Invariants: proxyEnv names the proxy only once it listens, and the bundle only once it was
// written; the bundle is replaced atomically (a process reading it sees the old one or the new one);
// its temporary file is a fresh one (O_EXCL), never a name the agent planted: the state directory is
// writable by the agent's uid, and a FIFO or symlink there must neither block sandboxd's loop (the
// write is synchronous) nor redirect the write.
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';

/** Where the proxy listens inside the container. */
export const PROXY_HOST = '127.0.0.1';
/** The system's CA bundle (Debian's ca-certificates), the start of ours. */
const SYSTEM_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

/**
 * The proxy variables every process of the agent gets (exec.ts childEnv), once the proxy listens:
 * both spellings, since curl reads only the lower-case http_proxy and Python's requests prefers it.
 * Loopback stays direct: it is the container's own.
 */
export const proxyEnv: Record<string, string> = {};

/**
 * The CA bundle every TLS client of the agent is pointed at: the system's, plus the tenant's
 * interception CA once the host sends it (egressTrust). Root is read-only, so it lives in
 * sandboxd's state directory; one file serves OpenSSL (curl, git, Python), Node and pip.
 */
export const setTrustEnv = (bundle: string): void => {
  Object.assign(proxyEnv, {
    SSL_CERT_FILE: bundle,
    CURL_CA_BUNDLE: bundle,
    REQUESTS_CA_BUNDLE: bundle,
    PIP_CERT: bundle,
    GIT_SSL_CAINFO: bundle,
    NODE_EXTRA_CA_CERTS: bundle,
    npm_config_cafile: bundle,
  });
};

export const setProxyEnv = (port: number): void => {
  const url = `http://${PROXY_HOST}:${port}`;
  const noProxy = 'localhost,127.0.0.1,::1';
  Object.assign(proxyEnv, {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    // npm reads its own settings first; these match the variables above.
    npm_config_proxy: url,
    npm_config_https_proxy: url,
  });
};

let system: string | undefined;
/** The image's bundle, read once (it is part of the image: it never changes under us). */
export const systemBundle = (): string => {
  if (system === undefined) {
    try {
      system = readFileSync(SYSTEM_BUNDLE, 'utf8');
    } catch {
      system = '';
    }
  }
  return system;
};

/**
 * Replaces the bundle atomically: a process reading it sees the old one or the new one. Written
 * with synchronous calls (~0.2 MB to the container's own disk, a page-cache copy): the tenant's CA
 * comes with an agent's first command, and through Node's thread pool the write took 5-8 ms of
 * sandboxd's loop beside that command (issue 33, agent ready).
 */
export const writeBundle = (stateDir: string, bundle: string, text: string): void => {
  mkdirSync(stateDir, { recursive: true });
  // A random name created exclusively ('wx': O_CREAT | O_EXCL): whatever is already there, a FIFO
  // or a symlink the agent made included, fails the open at once instead of being opened.
  const tmp = `${bundle}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(tmp, text, { mode: 0o644, flag: 'wx' });
  try {
    renameSync(tmp, bundle);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
    throw e;
  }
};
