// Certificates for the node protocol (docs/nodes.md, "Certificates"), made with the `openssl`
// command: a cluster CA, and certificates it signs for node agents (server: the names and addresses
// control planes dial, and the role `urn:dsh:node:<name>`, <name> as in DSH_NODES) and control
// planes (client, the role `urn:dsh:control-plane` and the instances it acts for,
// `urn:dsh-instance:<id>`: `dsh-sandbox nodes instance` prints a control plane's;
// host/sandbox/nodes/remote/roles.ts). The tests make theirs with the same functions.
// Usage:
//   node scripts/node-certs.ts ca <dir>                         → <dir>/ca.pem, <dir>/ca.key
//   node scripts/node-certs.ts node <dir> <name> <host>[,<host>…] → <dir>/<name>.pem, .key (server)
//   node scripts/node-certs.ts control <dir> <name> <instance>[,<instance>…] → <dir>/<name>.pem, .key (client)
// Invariant: keys are written mode 0600; the CA's key never leaves <dir> (keep it offline).

import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import {
  CONTROL_PLANE_ROLE,
  INSTANCE_ID,
  INSTANCE_ID_TEXT,
  instanceName,
  nodeRole,
} from '../host/sandbox/nodes/remote/roles.ts';

const DAYS = '825';
const openssl = (args: string[]): void => {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
};

/** A new CA in `dir` (ca.pem, ca.key). */
export function makeCa(dir: string, subject = '/CN=dsh-nodes-ca'): { cert: string; key: string } {
  mkdirSync(dir, { recursive: true });
  const cert = join(dir, 'ca.pem');
  const key = join(dir, 'ca.key');
  openssl(
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes']
      .concat(['-keyout', key, '-out', cert, '-days', DAYS, '-subj', subject])
      .concat([
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,cRLSign',
      ]),
  );
  chmodSync(key, 0o600);
  return { cert, key };
}

/**
 * Node `name`'s certificate (a server's) for `hosts` (DNS names or IP addresses), signed by the CA
 * in `caDir`; written to `dir`/<name>.pem and .key.
 */
export function makeCert(
  caDir: string,
  dir: string,
  name: string,
  hosts: readonly string[],
): { cert: string; key: string } {
  const san = hosts.map((h) => (isIP(h) ? `IP:${h}` : `DNS:${h}`));
  return signCert(
    caDir,
    dir,
    name,
    `extendedKeyUsage=serverAuth\nkeyUsage=digitalSignature\nsubjectAltName=${[`URI:${nodeRole(name)}`, ...san].join(',')}\n`,
  );
}

/**
 * A control plane's certificate (a client's) `name`, acting for `instances` (its store's instance
 * id; replicas of one deployment share it), signed by the CA in `caDir`; written to `dir`/<name>.pem
 * and .key. A node serves it only for those instances.
 */
export function makeControlCert(
  caDir: string,
  dir: string,
  name: string,
  instances: readonly string[],
): { cert: string; key: string } {
  if (instances.length === 0 || !instances.every((i) => INSTANCE_ID.test(i)))
    throw new Error(`a control plane's instances are ${INSTANCE_ID_TEXT}, got ${instances.join(',')}`);
  const names = [CONTROL_PLANE_ROLE, ...instances.map(instanceName)].map((uri) => `URI:${uri}`);
  return signCert(
    caDir,
    dir,
    name,
    `extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\nsubjectAltName=${names.join(',')}\n`,
  );
}

/** A certificate `name` with the given `openssl x509` extensions (a file's text), signed by the CA in `caDir`. */
export function signCert(
  caDir: string,
  dir: string,
  name: string,
  extensions: string,
): { cert: string; key: string } {
  mkdirSync(dir, { recursive: true });
  const key = join(dir, `${name}.key`);
  const cert = join(dir, `${name}.pem`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  openssl(
    ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key].concat([
      '-out',
      csr,
      '-subj',
      `/CN=${name}`,
    ]),
  );
  writeFileSync(ext, extensions);
  openssl(
    ['x509', '-req', '-in', csr, '-CA', join(caDir, 'ca.pem'), '-CAkey', join(caDir, 'ca.key')].concat([
      '-CAcreateserial',
      '-out',
      cert,
      '-days',
      DAYS,
      '-extfile',
      ext,
    ]),
  );
  rmSync(csr, { force: true });
  rmSync(ext, { force: true });
  chmodSync(key, 0o600);
  return { cert, key };
}

/** A node's name as DSH_NODES spells it: its certificate's role names it. */
const NODE_NAME = /^[a-z][a-z0-9-]{0,31}$/;

const main = (argv: string[]): number => {
  const [kind, dir, name, more] = argv;
  const list = more?.split(',') ?? [];
  if (kind === 'ca' && dir) makeCa(dir);
  else if (kind === 'node' && dir && name && more && NODE_NAME.test(name)) makeCert(dir, dir, name, list);
  else if (kind === 'control' && dir && name && list.length > 0 && list.every((i) => INSTANCE_ID.test(i)))
    makeControlCert(dir, dir, name, list);
  else {
    process.stderr.write(
      'usage: node scripts/node-certs.ts ca <dir> | node <dir> <name> <host>[,…] | control <dir> <name> <instance>[,…]\n' +
        "(a node's <name> is its name in DSH_NODES: [a-z][a-z0-9-]*, at most 32; a control plane's\n" +
        "<instance> is its store's instance id, which `dsh-sandbox nodes instance` prints)\n",
    );
    return 2;
  }
  return 0;
};

if (import.meta.main) process.exitCode = main(process.argv.slice(2));
