// sandboxd's identity, apart from the agent's. In a container sandboxd starts as root with only
// CAP_SETUID and CAP_SETGID (host/sandbox/docker/config.ts), SANDBOXD_AGENT=uid:gid and
// SANDBOXD_SERVER_GID=gid, and at once becomes real/saved uid 0, effective uid = the agent's; its
// effective gid is the agent's too, its real/saved gid the servers' group (no supplementary groups).
// So:
// - every file sandboxd touches is touched with exactly the agent's permissions and comes out owned
//   by the agent (file access uses the effective ids), with no capability in effect;
// - the agent's processes (all three ids = the agent's) can neither signal sandboxd (kill(2) needs
//   the sender's real or effective uid to equal the target's real or saved uid: 0) nor ptrace it,
//   read its /proc/<pid>/environ, mem or fd/* (those need uid == euid == suid of the target, and the
//   effective-uid change made it non-dumpable as well);
// - sandboxd can still signal the agent's processes (its effective uid is theirs).
// Its helpers (spawner, PTY helper) keep the same split: execve copies the effective ids into the
// saved ones, so each first sets its saved ids back to the real ones (PYTHON_PRELUDE); gVisor's
// execve resets the effective ids to the real ones instead, so the spawner, told the agent's ids,
// takes them as its effective ids again (spawner-script.ts apart_again). Everything
// the agent runs gets all three ids = the agent's before exec (setregid(g, g) and setreuid(u, u) in
// the spawner's child, between fork and exec: Python's Popen user/group; setpriv for jobs and for
// the rare exec that child_process starts; setresuid in the PTY child): a uid change that leaves no
// id 0 clears every capability, and no-new-privileges stays on. child_process's own uid/gid options
// must never be used here: Node calls setuid/setgid, which from an effective (not real) root change
// only the effective ids and would leave the child real uid 0.
// Programs on pipes (stdio MCP servers, language servers: stdio.ts) run as the servers instead:
// the agent's uid, so they read and write the workspace exactly as the agent does (its files are
// theirs, theirs the agent's), but the servers' gid (all three). Reading another process's
// /proc/<pid>/environ, mem or fd, or tracing it, needs the reader's uid AND gid to equal the
// target's real, effective and saved ones, so the agent's processes cannot read a server's
// environment (an MCP server's `env` holds the tenant's tokens). Taking the servers' gid needs no
// capability: it is the real gid of sandboxd and its helpers, which setresgid(2) may always take.
// Outside a container (unit tests, local runs) SANDBOXD_AGENT is unset and nothing changes.

import { chmodSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';

/** util-linux setpriv (in the image): takes all three ids without a capability, then execs. */
export const SETPRIV = '/usr/bin/setpriv';

export interface AgentIds {
  uid: number;
  gid: number;
}

/** Python that restores saved ids to the real ones (0) when the effective ones differ. */
export const PYTHON_PRELUDE = `
import os as _os
def _keep_apart():
    r, e, _s = _os.getresuid()
    if r != e:
        rg, eg, _sg = _os.getresgid()
        _os.setresgid(rg, eg, rg)
        _os.setresuid(r, e, r)
_keep_apart()
`;

/** The agent's ids when sandboxd runs apart from the agent (effective ids differ from real ones). */
export const agentIds = (): AgentIds | undefined => {
  if (typeof process.getuid !== 'function' || typeof process.geteuid !== 'function') return undefined;
  const uid = process.geteuid();
  if (process.getuid() === uid) return undefined;
  return { uid, gid: (process.getegid as () => number)() };
};

const parseIds = (spec: string): AgentIds => {
  const m = /^(\d{1,9}):(\d{1,9})$/.exec(spec);
  const uid = Number(m?.[1]);
  const gid = Number(m?.[2]);
  if (!m || uid === 0 || gid === 0) throw new Error(`SANDBOXD_AGENT must be uid:gid (not 0), got ${spec}`);
  return { uid, gid };
};

const parseServerGid = (spec: string | undefined, agent: AgentIds): number => {
  const gid = Number(spec);
  if (!/^\d{1,9}$/.test(spec ?? '') || gid === 0 || gid === agent.gid)
    throw new Error(
      `SANDBOXD_SERVER_GID must be a gid other than 0 and the agent's (${agent.gid}), got ${String(spec)}: stdio servers must not run in the agent's group`,
    );
  return gid;
};

/**
 * Become real/saved root with the agent's effective ids and the servers' real/saved gid (see the
 * header). `spec` is SANDBOXD_AGENT, `serverGid` SANDBOXD_SERVER_GID; an unset SANDBOXD_AGENT means
 * "run as we are" (local runs). Throws when it is set but cannot be honoured: sandboxd must never
 * run as the agent's own uid in a container, nor run its servers in the agent's group.
 */
export const runApart = (spec: string | undefined, serverGid: string | undefined): AgentIds | undefined => {
  if (!spec) return undefined;
  const ids = parseIds(spec);
  const servers = parseServerGid(serverGid, ids);
  const current = agentIds();
  if (current?.uid === ids.uid && current.gid === ids.gid && process.getgid?.() === servers) return ids; // done already
  if (process.getuid?.() !== 0 || process.geteuid?.() !== 0)
    throw new Error(
      `sandboxd must start as root (uid 0, with CAP_SETUID and CAP_SETGID) to run apart from the agent (uid ${ids.uid}); it runs as uid ${process.getuid?.()}`,
    );
  if (!existsSync(SETPRIV))
    throw new Error(`${SETPRIV} is missing: the agent's commands could not drop sandboxd's ids`);
  const p = process as Required<Pick<NodeJS.Process, 'setgroups' | 'setgid' | 'setegid' | 'seteuid'>>;
  p.setgroups([]);
  p.setgid(servers); // as root: real, effective and saved
  p.setegid(ids.gid);
  p.seteuid(ids.uid);
  const now = agentIds();
  if (
    now?.uid !== ids.uid ||
    now.gid !== ids.gid ||
    process.getuid?.() !== 0 ||
    process.getgid?.() !== servers
  )
    throw new Error('could not take the agent effective ids');
  return ids;
};

/** Whether this process is non-dumpable (its /proc entries then belong to root, not to its euid). */
export const nonDumpable = (): boolean => {
  try {
    return statSync('/proc/self/environ').uid === 0 && process.geteuid?.() !== 0;
  } catch {
    return false;
  }
};

/** Real, effective and saved uid of `pid`, from /proc (undefined when it is gone or unreadable). */
export const uidsOf = (pid: number): [number, number, number] | undefined => {
  try {
    const line = /^Uid:\s+(\d+)\s+(\d+)\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return line ? [Number(line[1]), Number(line[2]), Number(line[3])] : undefined;
  } catch {
    return undefined;
  }
};

/** A process's ids as /proc/<pid>/status lists them: real, effective, saved (and filesystem) ids, groups. */
export interface ProcIds {
  uids: number[];
  gids: number[];
  groups: number[];
}

/** The ids in a /proc/<pid>/status text; undefined when a line is missing or malformed. */
export const procIdsIn = (status: string): ProcIds | undefined => {
  const ids = (name: string, min: number): number[] | undefined => {
    const text = new RegExp(`^${name}:[ \t]*([0-9 \t]*)$`, 'm').exec(status)?.[1]?.trim();
    if (text === undefined) return undefined;
    const list = text === '' ? [] : text.split(/[ \t]+/).map(Number);
    return list.length >= min && list.every(Number.isSafeInteger) ? list : undefined;
  };
  const [uids, gids, groups] = [ids('Uid', 3), ids('Gid', 3), ids('Groups', 0)];
  return uids && gids && groups ? { uids, gids, groups } : undefined;
};

/** The ids of `pid` (undefined when it is gone or unreadable). */
export const procIdsOf = (pid: number): ProcIds | undefined => {
  try {
    return procIdsIn(readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return undefined;
  }
};

/**
 * Why a helper with these ids does not run apart from the agent the way sandboxd does (see the
 * header: uids 0, the agent's, 0; gids the servers', the agent's, the servers'; no supplementary
 * group), or undefined when it does. A gid off the split would give the helper's commands, or the
 * agent, a group they must not have (the servers' group holds the stdio servers' environments).
 */
export const notApart = (ids: ProcIds | undefined, agent: AgentIds, servers: number): string | undefined => {
  if (ids === undefined) return 'its ids cannot be read';
  const said = `uids ${ids.uids.slice(0, 3).join(' ')}, gids ${ids.gids.slice(0, 3).join(' ')}, groups [${ids.groups.join(' ')}]`;
  const want = `uids 0 ${agent.uid} 0, gids ${servers} ${agent.gid} ${servers}, groups []`;
  return said === want ? undefined : `${said}, not ${want}`;
};

/**
 * Whether sandboxd may signal `pid` on the agent's behalf (a pid read from a record the agent can
 * write): always when not running apart; else only a process whose real uid is the agent's, so a
 * forged record never turns sandboxd against itself or its helpers.
 */
export const agentMaySignal = (pid: number): boolean => {
  const ids = agentIds();
  if (!ids) return true;
  return uidsOf(pid)?.[0] === ids.uid;
};

/** Who a program runs as: the agent, or a server (a program on pipes; see the header). */
export type RunAs = 'agent' | 'server';

/** The servers' gid (sandboxd's real gid) when running apart, else undefined. */
export const serverGid = (): number | undefined => (agentIds() ? process.getgid?.() : undefined);

/**
 * `file args` as a command that first takes all three of the agent's ids, or for a server the
 * agent's uid and the servers' gid (util-linux setpriv, in the image), for processes started with
 * child_process; unchanged when not running apart.
 */
export const asAgent = (
  file: string,
  args: string[],
  as: RunAs = 'agent',
): { file: string; args: string[] } => {
  const ids = agentIds();
  if (!ids) return { file, args };
  const gid = as === 'server' ? serverGid() : ids.gid;
  return {
    file: SETPRIV,
    args: [`--reuid=${ids.uid}`, `--regid=${gid}`, '--keep-groups', '--', file, ...args],
  };
};

/**
 * A directory where only those who know an entry's name reach it: owned by root, mode 1733 (anyone
 * may create, nobody but root may list; sticky). The spawner's FIFOs live here under random names.
 * Made before the identity change, as root; undefined when not running as root.
 */
export const makeDropBox = (path: string): string | undefined => {
  if (process.geteuid?.() !== 0) return undefined;
  mkdirSync(path, { recursive: true, mode: 0o700 });
  chmodSync(path, 0o1733);
  return path;
};
