// A tenant's egress settings as the service keeps them: validated and made canonical on the way in
// (patterns, methods, header names, budgets within the operator's maxima), stored whole, and shown
// back without a single secret. A credential sent without a value keeps the value stored under its
// name, so a client can send back what GET showed it (names only) without losing the secrets.
// Invariants: `view` never holds a credential value; `get` is what the gateway enforces. Each
// method reads the store once, awaited (put: inside the store's update, the read and the write one
// transaction).
// Across processes sharing the store: put() publishes a `config` wake-up with the tenant's id, and
// every process that hears it forgets its hasSearch memo of that tenant (all of them after a resync).
import { SandboxError } from '../errors.ts';
import type { JsonValue } from '../json.ts';
import type { EgressSettingsStore } from '../store/egress.ts';
import type { WakeBus } from '../store/wake-port.ts';
import type { EgressBudget } from './budget.ts';
import { canonicalPattern } from './hosts.ts';
import { canonicalRules, type EgressRule } from './rules.ts';
import type { EgressCredential, SearchSettings, TenantEgress } from './types.ts';

/** What a tenant sends: a credential's value may be left out to keep the stored one. */
export interface EgressSettingsInput {
  allow: EgressRule[];
  credentials?: Array<Omit<EgressCredential, 'value'> & { value?: string }>;
  budget?: Partial<EgressBudget>;
  search?: SearchSettings | null;
}

/** What the API shows: credentials by name, host, header and `allowInsecure` only. */
export interface EgressSettingsView {
  allow: EgressRule[];
  credentials: Array<Omit<EgressCredential, 'value'>>;
  /** The budget in force: the tenant's, within the operator's maxima. */
  budget: EgressBudget;
  search?: SearchSettings;
}

export interface EgressSettings {
  /** What the gateway enforces; undefined when the tenant never set anything. */
  get(tenantId: string): Promise<TenantEgress | undefined>;
  /**
   * Whether the tenant set a search provider of its own: asked for every batch (is web_search
   * offered?), so remembered for SEARCH_MEMO_MS after a read; put() forgets it at once here and,
   * through the wake-up bus, in every other process that hears it (else within that time). A
   * search itself reads the settings afresh (get).
   */
  hasSearch(tenantId: string): Promise<boolean>;
  view(tenantId: string): Promise<EgressSettingsView>;
  put(tenantId: string, input: EgressSettingsInput): Promise<EgressSettingsView>;
}

/** Headers the gateway itself owns on every request. */
const RESERVED_HEADERS = new Set([
  'host',
  'content-length',
  'transfer-encoding',
  'connection',
  'upgrade',
  'te',
  'trailer',
  'keep-alive',
  'proxy-connection',
]);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;

/** How long hasSearch remembers a tenant's answer. */
export const SEARCH_MEMO_MS = 2000;
/** The most tenants it remembers at once (the oldest is forgotten first). */
const SEARCH_MEMO_MAX = 1024;

const bad = (message: string): SandboxError => new SandboxError('BAD_REQUEST', message);

/** An http(s) base URL without userinfo: what a search provider's `url` must be. */
export function checkServiceUrl(raw: string, what: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad(`${what} ${JSON.stringify(raw.slice(0, 200))} is not a URL.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw bad(`${what} must be an http or https URL.`);
  if (url.username !== '' || url.password !== '')
    throw bad(`${what} must not carry a user name or password; use a credential for its host.`);
  return url.href;
}

export function createEgressSettings(options: {
  store: EgressSettingsStore;
  maxBudget: EgressBudget;
  /** Default Date.now. */
  now?: () => number;
  /** Where changes are announced to, and heard from, other processes (Store.wake). Default: none. */
  wake?: Pick<WakeBus, 'publish' | 'subscribe' | 'onResync'>;
}): EgressSettings {
  const { store, maxBudget, wake } = options;
  const now = options.now ?? Date.now;
  const searchMemo = new Map<string, { search: boolean; until: number }>();
  // For as long as the store's bus: the memo is all they hold.
  wake?.subscribe('config', (tenantId) => searchMemo.delete(tenantId));
  wake?.onResync(() => searchMemo.clear());

  async function hasSearch(tenantId: string): Promise<boolean> {
    const known = searchMemo.get(tenantId);
    if (known !== undefined && known.until > now()) return known.search;
    const search = (await get(tenantId))?.search !== undefined;
    searchMemo.delete(tenantId);
    if (searchMemo.size >= SEARCH_MEMO_MAX) searchMemo.delete(searchMemo.keys().next().value as string);
    searchMemo.set(tenantId, { search, until: now() + SEARCH_MEMO_MS });
    return search;
  }

  async function get(tenantId: string): Promise<TenantEgress | undefined> {
    return (await store.get(tenantId)) as TenantEgress | undefined;
  }

  async function view(tenantId: string): Promise<EgressSettingsView> {
    return viewOf(await get(tenantId));
  }

  function viewOf(settings: TenantEgress | undefined): EgressSettingsView {
    return {
      allow: settings?.allow ?? [],
      credentials: (settings?.credentials ?? []).map(({ name, host, header, allowInsecure }) => ({
        name,
        host,
        header,
        ...(allowInsecure === true ? { allowInsecure } : {}),
      })),
      budget: {
        connections: Math.min(settings?.budget?.connections ?? maxBudget.connections, maxBudget.connections),
        bytesPerHour: Math.min(
          settings?.budget?.bytesPerHour ?? maxBudget.bytesPerHour,
          maxBudget.bytesPerHour,
        ),
      },
      ...(settings?.search === undefined ? {} : { search: settings.search }),
    };
  }

  function credentialsOf(
    before: TenantEgress | undefined,
    input: EgressSettingsInput['credentials'] = [],
  ): EgressCredential[] {
    const stored = new Map((before?.credentials ?? []).map((c) => [c.name, c]));
    const names = new Set<string>();
    return input.map((c) => {
      if (names.has(c.name)) throw bad(`Two credentials are named ${JSON.stringify(c.name)}.`);
      names.add(c.name);
      if (!HEADER_NAME.test(c.header) || RESERVED_HEADERS.has(c.header.toLowerCase()))
        throw bad(`Credential ${c.name}: ${JSON.stringify(c.header)} is not a header the gateway may set.`);
      const value = c.value ?? stored.get(c.name)?.value;
      if (value === undefined)
        throw bad(`Credential ${c.name} has no value: send one (only a stored credential may leave it out).`);
      if (/[\r\n\0]/.test(value)) throw bad(`Credential ${c.name}: a header value has no line breaks.`);
      return {
        name: c.name,
        host: canonicalPattern(c.host),
        header: c.header,
        value,
        ...(c.allowInsecure === true ? { allowInsecure: true } : {}),
      };
    });
  }

  async function put(tenantId: string, input: EgressSettingsInput): Promise<EgressSettingsView> {
    for (const key of ['connections', 'bytesPerHour'] as const) {
      const asked = input.budget?.[key];
      if (asked !== undefined && asked > maxBudget[key])
        throw new SandboxError(
          'LIMIT_EXCEEDED',
          `budget.${key} ${asked} is over the operator's most (${maxBudget[key]}).`,
        );
    }
    const allow = canonicalRules(input.allow);
    // The stored credentials a value-less one keeps are read in the write's own transaction, so a
    // concurrent put cannot slip a value in between that this write would then undo.
    let written: TenantEgress | undefined;
    await store.update(tenantId, (before) => {
      written = {
        allow,
        credentials: credentialsOf(before as TenantEgress | undefined, input.credentials),
        ...(input.budget === undefined ? {} : { budget: input.budget }),
        ...(input.search == null
          ? {}
          : {
              search: {
                provider: input.search.provider,
                url: checkServiceUrl(input.search.url, 'search.url'),
              },
            }),
      };
      return JSON.parse(JSON.stringify(written)) as JsonValue;
    });
    searchMemo.delete(tenantId);
    await wake?.publish('config', tenantId);
    return viewOf(written);
  }

  return { get, hasSearch, view, put };
}
