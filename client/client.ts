// The entry object: `new DshClient({ baseUrl, apiKey })`, its agents (create, get, list, delete)
// as DshAgent handles, the tenant's skills and egress settings (handles.ts), and `api`, the typed openapi-fetch client of every route for what the
// ergonomic layer does not cover.
import type { Client } from 'openapi-fetch';
import { DshAgent } from './agent.ts';
import { type TenantHandles, tenantHandles } from './handles.ts';
import { createTransport, type DshClientOptions, ok, type Transport } from './http.ts';
import type { paths } from './openapi.ts';
import type { CreateAgentOptions, SnapshotView } from './types.ts';

export class DshClient {
  /** The typed client of every route (openapi-fetch), for what the handles do not cover. */
  readonly api: Client<paths>;
  readonly agents: Agents;
  /** The tenant's skill catalog: list, get, put (an uncompressed tar), delete. */
  readonly skills: TenantHandles['skills'];
  /** The tenant's egress settings: get, put. */
  readonly egress: TenantHandles['egress'];
  readonly snapshots: Snapshots;

  constructor(options: DshClientOptions) {
    const transport = createTransport(options);
    this.api = transport.api;
    this.agents = new Agents(transport);
    const handles = tenantHandles(transport);
    this.skills = handles.skills;
    this.egress = handles.egress;
    this.snapshots = new Snapshots(transport);
  }
}

/** The tenant's workspace snapshots (an agent takes one: `agent.snapshot()`). */
export class Snapshots {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** The tenant's snapshots (of agents deleted since too), oldest first. */
  async list(): Promise<SnapshotView[]> {
    return (await ok(this.#transport.api.GET('/v1/snapshots'))).snapshots;
  }

  /** Snapshot `id`; NOT_FOUND when the tenant has none of that id. */
  async get(id: string): Promise<SnapshotView> {
    return ok(this.#transport.api.GET('/v1/snapshots/{id}', { params: { path: { id } } }));
  }

  /** Deletes snapshot `id` (agents made from it keep their copies). */
  async delete(id: string): Promise<void> {
    await ok(this.#transport.api.DELETE('/v1/snapshots/{id}', { params: { path: { id } } }));
  }
}

export class Agents {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Creates an agent (its sandbox starts on first use). */
  async create(options: CreateAgentOptions = {}): Promise<DshAgent> {
    return this.#handle(await ok(this.#transport.api.POST('/v1/agents', { body: options })));
  }

  /** The tenant's agent `id`; NOT_FOUND when there is none (another tenant's too). */
  async get(id: string): Promise<DshAgent> {
    return this.#handle(await ok(this.#transport.api.GET('/v1/agents/{id}', { params: { path: { id } } })));
  }

  /** The tenant's agents. */
  async list(): Promise<DshAgent[]> {
    const { agents } = await ok(this.#transport.api.GET('/v1/agents'));
    return agents.map((agent) => this.#handle(agent));
  }

  /** Deletes agent `id`, its sandbox and its children. */
  async delete(id: string): Promise<void> {
    await ok(this.#transport.api.DELETE('/v1/agents/{id}', { params: { path: { id } } }));
  }

  #handle(info: DshAgent['info']): DshAgent {
    return new DshAgent(this.#transport, info);
  }
}
