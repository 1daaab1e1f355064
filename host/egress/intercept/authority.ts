// Each tenant's interception CA and the leaves it signs: the CA is made at a tenant's first use and
// kept in the store (its key sealed: host/store/egress.ts), so every sandbox of the tenant, before
// and after a restart, trusts the same one; leaves are made per host on demand and kept in memory
// (a TLS secure context each) until a day before they expire.
// Invariants: one CA per tenant for the store's life (putCaOnce: the first writer wins, a racing
// second process reads the first's); at most `maxLeaves` contexts are held, oldest dropped first.
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
  caOf(tenantId: string): string;
  /** A TLS context presenting a leaf for `host` signed by the tenant's CA. */
  contextFor(tenantId: string, host: string): SecureContext;
}

const DAY_MS = 86_400_000;

export function createAuthorities(options: AuthorityOptions): Authorities {
  const leafDays = options.leafDays ?? 7;
  const maxLeaves = options.maxLeaves ?? 1000;
  const now = options.now ?? Date.now;
  const cas = new Map<string, { ca: CertifiedKey; issuer: ReturnType<typeof issuerOf> }>();
  const leaves = new Map<string, { context: SecureContext; renewAt: number }>();

  function authority(tenantId: string) {
    let entry = cas.get(tenantId);
    if (!entry) {
      const ca =
        options.store.getCa(tenantId) ??
        options.store.putCaOnce(tenantId, mintCa(`dsh-sandbox egress CA (tenant ${tenantId.slice(0, 32)})`));
      entry = { ca, issuer: issuerOf(ca) };
      cas.set(tenantId, entry);
    }
    return entry;
  }

  return {
    caOf: (tenantId) => authority(tenantId).ca.certPem,
    contextFor(tenantId, host) {
      const key = `${tenantId}\0${host}`;
      const kept = leaves.get(key);
      if (kept && kept.renewAt > now()) return kept.context;
      const { ca, issuer } = authority(tenantId);
      const leaf = mintLeaf(ca, issuer, host, leafDays, new Date(now()));
      const context = createSecureContext({ key: leaf.keyPem, cert: leaf.certPem });
      leaves.delete(key);
      leaves.set(key, { context, renewAt: now() + (leafDays - 1) * DAY_MS });
      if (leaves.size > maxLeaves) leaves.delete(leaves.keys().next().value as string);
      return context;
    },
  };
}
