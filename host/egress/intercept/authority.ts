// Each tenant's interception CA and the leaves it signs: the CA is made at a tenant's first use and
// kept in the store (its key sealed: host/store/egress.ts), so every sandbox of the tenant, before
// and after a restart, trusts the same one; leaves are made per host on demand and kept in memory
// (a TLS secure context each) until a day before they expire.
// Invariants: one CA per tenant for the store's life (putCaOnce: the first writer wins, a racing
// second process reads the first's); a tenant's CA is read from the store once per process (one
// load shared by the calls that wait for it, forgotten if it fails); at most `maxLeaves` contexts
// are held, oldest dropped first.
import { createSecureContext, type SecureContext } from 'node:tls';
import type { EgressSettingsStore } from '../../store/egress.ts';
import { type CertifiedKey, issuerOf, mintCa, mintLeaf } from './x509.ts';

export interface AuthorityOptions {
  store: Pick<EgressSettingsStore, 'getCa' | 'putCaOnce'>;
  /** Days a leaf is valid. Default 7. */
  leafDays?: number;
  /** Leaves kept in memory. Default 1000. */
  maxLeaves?: number;
  now?: () => number;
}

export interface Authorities {
  /** The tenant's CA certificate (PEM), made and stored at its first use. */
  caOf(tenantId: string): Promise<string>;
  /** A TLS context presenting a leaf for `host` signed by the tenant's CA. */
  contextFor(tenantId: string, host: string): Promise<SecureContext>;
}

const DAY_MS = 86_400_000;

export function createAuthorities(options: AuthorityOptions): Authorities {
  const leafDays = options.leafDays ?? 7;
  const maxLeaves = options.maxLeaves ?? 1000;
  const now = options.now ?? Date.now;
  type Authority = { ca: CertifiedKey; issuer: ReturnType<typeof issuerOf> };
  const cas = new Map<string, Promise<Authority>>();
  const leaves = new Map<string, { context: SecureContext; renewAt: number }>();

  async function load(tenantId: string): Promise<Authority> {
    const ca =
      (await options.store.getCa(tenantId)) ??
      (await options.store.putCaOnce(
        tenantId,
        mintCa(`dsh-sandbox egress CA (tenant ${tenantId.slice(0, 32)})`),
      ));
    return { ca, issuer: issuerOf(ca) };
  }

  function authority(tenantId: string): Promise<Authority> {
    let entry = cas.get(tenantId);
    if (!entry) {
      entry = load(tenantId);
      cas.set(tenantId, entry);
      entry.catch(() => cas.delete(tenantId));
    }
    return entry;
  }

  return {
    caOf: async (tenantId) => (await authority(tenantId)).ca.certPem,
    async contextFor(tenantId, host) {
      const key = `${tenantId}\0${host}`;
      const kept = leaves.get(key);
      if (kept && kept.renewAt > now()) return kept.context;
      const { ca, issuer } = await authority(tenantId);
      const leaf = mintLeaf(ca, issuer, host, leafDays, new Date(now()));
      const context = createSecureContext({ key: leaf.keyPem, cert: leaf.certPem });
      leaves.delete(key);
      leaves.set(key, { context, renewAt: now() + (leafDays - 1) * DAY_MS });
      if (leaves.size > maxLeaves) leaves.delete(leaves.keys().next().value as string);
      return context;
    },
  };
}
