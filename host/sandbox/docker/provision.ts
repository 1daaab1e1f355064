// create(): an agent's sandbox is its container when it has one (lookup.ts), else a pooled one
// that still answers, else a new one; and the warm pool's items, made and discarded (pool.ts keeps
// them). A pool hit makes no Docker call before the agent is ready: the rename to the agent's name
// follows in the background (destroy waits for it), and adopt() finishes one a crash interrupted.
// Invariants: a pooled container is assigned only when the agent asks for the default disk size
// (a file system is not resized); a pooled one that fails to be assigned is discarded, reported
// and skipped; a pooled session opened with other read and output caps than the agent's is closed
// and opened again with the agent's.
import { nanoid } from 'nanoid';
import { DEFAULT_RUNTIME, type SandboxRuntime } from '../runtimes.ts';
import type { Sandbox, SandboxLimits, SandboxSpec } from '../types.ts';
import { detachEntry, handleOf, live, track } from './agent-live.ts';
import { LABEL_POOL, LABEL_POOL_OWNER, resolveLimits, resourceConfig } from './config.ts';
import { fromDocker } from './errors.ts';
import { lookup } from './lookup.ts';
import type { PoolItem } from './pool.ts';
import {
  agentLabels,
  createContainer,
  type Entry,
  type MadeContainer,
  type ProviderBase,
  type ProviderState,
  removeWith,
  sessionOptions,
} from './provider-state.ts';
import { closeLive, type Live, openSession } from './session.ts';

/** A started, sandboxd-verified container with the default limits that no agent owns yet. */
export async function makeWarm(s: ProviderBase): Promise<PoolItem> {
  const { container, workspace, link } = await createContainer(
    s,
    s.names.pool(nanoid(10)),
    { ...s.ownLabels, [LABEL_POOL]: '1', [LABEL_POOL_OWNER]: s.owner },
    s.defaults,
  );
  try {
    return {
      container,
      workspace,
      live: await openSession(
        container,
        s.connect,
        s.defaults,
        undefined,
        sessionOptions(s, { created: true, ...(link === undefined ? {} : { link }) }),
      ),
    };
  } catch (e) {
    await removeWith(s, container, workspace);
    throw e;
  }
}

export async function discardWarm(s: ProviderBase, item: PoolItem): Promise<void> {
  await closeLive(item.live);
  await removeWith(s, item.container, item.workspace);
}

/**
 * A container for a new agent: a pooled one when the pool has one that still answers (one that
 * vanished or fails is discarded, reported and skipped), else a new one.
 */
async function provision(
  s: ProviderState,
  spec: SandboxSpec & { runtime: SandboxRuntime },
  limits: SandboxLimits,
): Promise<MadeContainer & { opened?: Live; renaming?: Promise<void> }> {
  const { agentId, tenantId, runtime } = spec;
  const name = s.names.agent(agentId);
  // A pooled workspace has the default size (a file system is not resized on assignment), and a
  // pooled container the default runtime.
  const attempts =
    limits.diskBytes === s.defaults.diskBytes && runtime === DEFAULT_RUNTIME ? s.pool.ready : 0;
  for (let i = 0; i < attempts; i++) {
    const warm = s.pool.take();
    if (!warm) break;
    try {
      if (JSON.stringify(limits) !== JSON.stringify(s.defaults))
        await warm.container.update(resourceConfig(limits));
      // Off the path to ready: the store records the container id before the agent's first call,
      // and adopt() finishes a rename a crash interrupted (see the header).
      const renaming = warm.container.rename({ name }).catch((e: unknown) => {
        s.onError(fromDocker(e, 'Naming an assigned pooled sandbox', { agentId }));
      });
      return { container: warm.container, workspace: warm.workspace, opened: warm.live, renaming };
    } catch (e) {
      s.onError(fromDocker(e, 'Assigning a pooled sandbox (a new one is made instead)', { agentId }));
      void discardWarm(s, warm).catch(s.onError);
    }
  }
  return createContainer(s, name, agentLabels(s, agentId, tenantId), limits, undefined, runtime);
}

/** The provider's create(): the agent's sandbox, ready (its session open). */
export async function createSandbox(s: ProviderState, spec: SandboxSpec): Promise<Sandbox> {
  const { defaults, entries } = s;
  const limits = resolveLimits(defaults, s.maxima, spec.limits);
  const existing = await lookup(s, spec.agentId);
  if (existing) return handleOf(s, existing.entry, existing.id);
  const runtime = spec.runtime ?? DEFAULT_RUNTIME;
  await s.runtimes.require(runtime);
  const { container, workspace, opened, renaming, link } = await provision(s, { ...spec, runtime }, limits);
  const fresh = {
    container,
    limits,
    workspace,
    link,
    tenantId: spec.tenantId,
    runtime,
    lastUsed: Date.now(),
    created: opened === undefined,
    ...(renaming === undefined ? {} : { renaming }),
  };
  // A known entry whose container vanished takes the new one, so that its handles follow.
  let entry: Entry | undefined = entries.get(spec.agentId);
  if (entry) {
    await detachEntry(entry);
    Object.assign(entry, fresh);
  } else {
    entry = { agentId: spec.agentId, inFlight: 0, ...fresh };
    entries.set(spec.agentId, entry);
  }
  if (
    opened &&
    limits.maxReadBytes === defaults.maxReadBytes &&
    limits.maxOutputBytes === defaults.maxOutputBytes
  )
    track(s, entry, Promise.resolve(opened));
  else await closeLive(opened); // the client's caps differ: reconnect with this agent's
  await live(s, entry);
  return handleOf(s, entry, container.id);
}
