// An agent's live session, as the provider keeps it: opened on the first call (and again after the
// reaper stopped the container or the socket closed), followed until it ends, reopened at once with
// a restart when sandboxd stops answering, and opened on a replacement container when the agent's
// container vanished (removed by hand or by the engine), on its old workspace when that remains.
// Also the agent's Sandbox handle, whose every call goes through live().
// Invariants: an entry has at most one session opening or open (`entry.live`), forgotten when it
// ends; a destroyed entry never opens again (its old handles fail with SANDBOX_UNAVAILABLE); the
// egress proxy served for a session stops when that session ends.
import { SandboxError } from '../../errors.ts';
import { WORKSPACE_ROOT } from '../paths.ts';
import { isUnresponsive } from '../sandboxd/client.ts';
import type { Sandbox } from '../types.ts';
import { isContainerGone, isNotFound } from './errors.ts';
import { agentLabels, createContainer, type Entry, linkOf, type ProviderBase } from './provider-state.ts';
import { createSandboxHandle } from './sandbox.ts';
import { closeLive, type Live, openSession } from './session.ts';

/** Makes `opening` the entry's session and follows it: egress served, forgotten (or restarted) when it ends. */
export function track(s: ProviderBase, entry: Entry, opening: Promise<Live>): Promise<Live> {
  entry.live = opening;
  const forget = (): void => {
    if (entry.live === opening) entry.live = undefined;
  };
  opening.then((l) => {
    const egress = l.session.egress;
    if (egress && s.egress) {
      const stop = s.egress(entry.agentId, egress);
      void l.attachment.closed.then(stop);
      void l.session.closed?.then(stop, stop);
    }
    void l.attachment.closed.then(forget);
    void l.session.closed?.then((reason) => {
      forget();
      // sandboxd stopped answering: restart its container now, so the next call finds it back.
      if (isUnresponsive(reason) && !entry.live && !entry.destroyed && s.entries.get(entry.agentId) === entry)
        track(s, entry, openEntry(s, entry, true)).catch(s.onError);
    }, forget);
  }, forget);
  return opening;
}

/** The entry's session, opened when it has none (after a stop in progress). */
export async function live(s: ProviderBase, entry: Entry): Promise<Live> {
  entry.lastUsed = Date.now();
  if (entry.stopping) await entry.stopping;
  return entry.live ?? track(s, entry, openEntry(s, entry));
}

async function openEntry(s: ProviderBase, entry: Entry, restart = false): Promise<Live> {
  if (entry.destroyed)
    throw new SandboxError('SANDBOX_UNAVAILABLE', `The sandbox of agent ${entry.agentId} was destroyed.`, {
      data: { agentId: entry.agentId },
    });
  const created = entry.created === true;
  entry.created = false;
  try {
    if (entry.workspace) await s.workspaces.ready(entry.workspace);
    return await openSession(
      entry.container,
      s.connect,
      entry.limits,
      undefined,
      linkOf(s, entry, { restart, created }),
    );
  } catch (e) {
    if (!(await vanished(entry, e))) throw e;
  }
  await replace(s, entry);
  if (entry.workspace) await s.workspaces.ready(entry.workspace);
  return openSession(
    entry.container,
    s.connect,
    entry.limits,
    undefined,
    linkOf(s, entry, { created: true }),
  );
}

/** Whether `e` (or, when it says something else, an inspect now) shows the container is gone. */
async function vanished(entry: Entry, e: unknown): Promise<boolean> {
  return (
    isContainerGone(e) ||
    entry.container.inspect().then(
      () => false,
      (x: unknown) => isNotFound(x),
    )
  );
}

/** A new container for an agent whose container vanished: on its old workspace when that remains. */
async function replace(s: ProviderBase, entry: Entry): Promise<void> {
  const old = entry.workspace;
  const kept = old !== undefined && (await s.workspaces.exists(old));
  const made = await createContainer(
    s,
    s.names.agent(entry.agentId),
    agentLabels(s, entry.agentId, entry.tenantId),
    entry.limits,
    kept ? old : undefined,
    entry.runtime,
  );
  if (old && !kept) await s.workspaces.remove(old).catch(s.onError);
  entry.container = made.container;
  entry.workspace = made.workspace;
  entry.link = made.link;
  s.onError(
    new SandboxError(
      'SANDBOX_UNAVAILABLE',
      `The sandbox container of agent ${entry.agentId} was gone (removed outside this control plane); ` +
        (kept
          ? 'made a new one on its workspace (files kept, processes and jobs lost).'
          : 'made a new one with an empty workspace (its workspace was gone too).'),
      { data: { agentId: entry.agentId, container: made.container.id } },
    ),
  );
}

/** Closes the entry's session, if any (the container keeps running). */
export async function detachEntry(entry: Entry): Promise<void> {
  const l = entry.live;
  entry.live = undefined;
  if (l) await closeLive(await l.catch(() => undefined));
}

/** The agent's Sandbox: every call counts as in flight for the reaper and runs on live(). */
export function handleOf(s: ProviderBase, entry: Entry, id: string): Sandbox {
  return createSandboxHandle({
    id,
    agentId: entry.agentId,
    root: WORKSPACE_ROOT,
    resolve: s.resolve,
    use: async (fn) => {
      entry.inFlight++;
      try {
        return await fn((await live(s, entry)).session);
      } finally {
        entry.inFlight--;
        entry.lastUsed = Date.now();
      }
    },
    detach: () => detachEntry(entry),
    ...(s.spoolDir === undefined ? {} : { spoolDir: s.spoolDir }),
  });
}
