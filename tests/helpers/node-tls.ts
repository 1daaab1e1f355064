// The certificates the node tests make with scripts/node-certs.ts (tests/unit/sandbox/node-*.test.ts,
// tests/integration/nodes/), read back as the options serveNode, connectRemoteNode and an https
// request take. makeCert and makeControlCert write `<name>.pem` and `<name>.key` into the CA's
// folder, beside its `ca.pem`; the files are read at each call, as the tests did inline (a test
// may make a certificate again under the same name).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { NodeServerOptions } from '../../host/sandbox/nodes/remote/server.ts';

type Tls = Pick<NodeServerOptions, 'cert' | 'key' | 'ca'>;

/** Certificate `name`'s PEM and key from the CA folder `ca`, with the CA's certificate. */
export const tlsOf = (ca: string, name: string): Tls => ({
  cert: readFileSync(join(ca, `${name}.pem`), 'utf8'),
  key: readFileSync(join(ca, `${name}.key`), 'utf8'),
  ca: readFileSync(join(ca, 'ca.pem'), 'utf8'),
});

/**
 * serveNode's options but the node's: on loopback at `port` (0, the default: a free one), with the
 * certificate of node `name` (default `one`) from the CA folder `ca`.
 */
export const servingAs = (
  ca: string,
  name = 'one',
  port = 0,
): Pick<NodeServerOptions, 'host' | 'port'> & Tls => ({ host: '127.0.0.1', port, ...tlsOf(ca, name) });
