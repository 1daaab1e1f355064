// The egress room's public entry: createEgress() wires the tenants' settings, the gateway, the
// readable worker and the web access from one options object; everything else is named re-exports.
// serve.ts makes one from the Config; tests make one with a resolver and test hosts of their own.
import type { EgressSettingsStore } from '../store/egress.ts';
import type { EventLog } from '../store/types.ts';
import type { WakeBus } from '../store/wake-port.ts';
import type { Budgets, EgressBudget } from './budget.ts';
import { createEgressGateway, type EgressGateway, type Lookup, type TestHost } from './gateway.ts';
import { createReadablePool, type ReadablePool, type ReadablePoolOptions } from './readable/pool.ts';
import type { EgressRule } from './rules.ts';
import { createEgressSettings, type EgressSettings } from './settings.ts';
import { createWebAccess, type WebAccess, type WebLimits } from './web.ts';

export interface EgressOptions {
  store: EgressSettingsStore;
  events: Pick<EventLog, 'append' | 'admits'>;
  /** The agent's own rules (its config's `egress.allow`). */
  agentRulesOf: (tenantId: string, agentId: string) => Promise<EgressRule[] | undefined>;
  /** The operator's maxima of every tenant's budget. */
  maxBudget: EgressBudget;
  testHosts?: readonly TestHost[];
  lookup?: Lookup;
  ca?: string | Buffer;
  searxngUrl?: string;
  web?: Partial<WebLimits>;
  readable?: ReadablePoolOptions;
  onAuditError?: (error: unknown) => void;
  /** Tells other processes sharing the store about settings changes, and hears theirs (Store.wake). */
  wake?: WakeBus;
  /** The tenants' budgets. Default: counted in this process (./budget.ts); replicas: ./budget-shared.ts. */
  budgets?: Budgets;
}

export interface Egress {
  settings: EgressSettings;
  gateway: EgressGateway;
  web: WebAccess;
  /** Stops the readable worker. */
  close(): Promise<void>;
}

export function createEgress(options: EgressOptions): Egress {
  const settings = createEgressSettings({
    store: options.store,
    maxBudget: options.maxBudget,
    ...(options.wake === undefined ? {} : { wake: options.wake }),
  });
  const gateway = createEgressGateway({
    settingsOf: settings.get,
    agentRulesOf: options.agentRulesOf,
    events: options.events,
    maxBudget: options.maxBudget,
    ...(options.testHosts === undefined ? {} : { testHosts: options.testHosts }),
    ...(options.lookup === undefined ? {} : { lookup: options.lookup }),
    ...(options.ca === undefined ? {} : { ca: options.ca }),
    ...(options.onAuditError === undefined ? {} : { onAuditError: options.onAuditError }),
    ...(options.budgets === undefined ? {} : { budgets: options.budgets }),
  });
  const readable: ReadablePool = createReadablePool(options.readable);
  const web = createWebAccess({
    gateway,
    settings,
    readable,
    ...(options.searxngUrl === undefined ? {} : { searxngUrl: options.searxngUrl }),
    ...(options.web === undefined ? {} : { limits: options.web }),
  });
  return { settings, gateway, web, close: () => readable.close() };
}

export { classifyAddress } from './address.ts';
export { EGRESS_EVENT } from './audit.ts';
export type { Budgets, EgressBudget } from './budget.ts';
export { createSharedBudgets } from './budget-shared.ts';
export type { EgressConnection, EgressGateway, Lookup, TestHost } from './gateway.ts';
export type { EgressRule } from './rules.ts';
export type { EgressSettings, EgressSettingsView } from './settings.ts';
export type { EgressCaller, EgressCredential, SearchSettings, TenantEgress } from './types.ts';
export type { WebAccess } from './web.ts';
