// The lsp tool's language servers: one session per language per sandbox, started at the first
// query of that language and stopped after idleMs without one.
// Invariants: at most one session (or start) per language per sandbox; a start that fails, or a
// session stopped for idleness, is forgotten so the next query starts afresh; a sandbox's servers
// go with it (a WeakMap holds them).
import { SandboxError } from '../../../errors.ts';
import type { Sandbox } from '../../../sandbox/types.ts';
import type { Language } from './languages.ts';
import { type LspLimits, type LspSession, startSession } from './session.ts';

export interface Servers {
  sessions: Map<Language['id'], Promise<LspSession>>;
  timers: Map<Language['id'], NodeJS.Timeout>;
}

/** The lsp tool's servers, in every sandbox. */
export interface LspServers {
  bySandbox: WeakMap<Sandbox, Servers>;
  limits: LspLimits;
}

export async function sessionFor(
  s: LspServers,
  sandbox: Sandbox,
  language: Language,
  signal: AbortSignal,
): Promise<LspSession> {
  const { bySandbox, limits } = s;
  const stdio = sandbox.stdio;
  if (stdio === undefined)
    throw new SandboxError('SANDBOX_UNAVAILABLE', "This agent's sandbox cannot run language servers.");
  let servers = bySandbox.get(sandbox);
  if (servers === undefined) {
    servers = { sessions: new Map(), timers: new Map() };
    bySandbox.set(sandbox, servers);
  }
  const { sessions, timers } = servers;
  let pending = sessions.get(language.id);
  const current = pending === undefined ? undefined : await pending.catch(() => undefined);
  if (current === undefined || !current.alive()) {
    pending = startSession(stdio, language, limits, signal);
    sessions.set(language.id, pending);
    pending.catch(() => {
      if (sessions.get(language.id) === pending) sessions.delete(language.id);
    });
  }
  const session = await (pending as Promise<LspSession>);
  clearTimeout(timers.get(language.id));
  timers.set(
    language.id,
    setTimeout(() => {
      session.close();
      if (sessions.get(language.id) === pending) sessions.delete(language.id);
    }, limits.idleMs).unref(),
  );
  return session;
}
