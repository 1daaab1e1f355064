// The seccomp profile every sandbox container runs under: Docker's default profile of the engine's
// release minus io_uring, memfd_secret, POSIX message queues and the key, bpf and perf syscalls
// (seccomp.json, written by scripts/seccomp/generate.ts, which says why each one goes). Docker's
// default already refuses userfaultfd and the key syscalls outright, and allows bpf,
// perf_event_open, mount, unshare, setns and namespace flags of clone only to a container holding
// CAP_SYS_ADMIN, which ours never does. Loaded and checked once, when this module loads.
// Under gVisor (runsc --oci-seccomp) the same profile is enforced by gVisor's kernel with two
// changes (seccompFor):
// - gVisor answers a rule's SCMP_ACT_ERRNO with EPERM whatever its errnoRet, so the ENOSYS that
//   tells glibc to fall back from clone3 to clone became EPERM and no thread could start (Node,
//   Python); clone3 is let through to gVisor, which does not implement it (ENOSYS), and clone keeps
//   its rule refusing namespace flags.
// - runsc (release 20221219) resolves the profile's names in its own syscall table and drops a name
//   it does not know ("OCI seccomp: ignoring syscall" in its debug log); there x86-64's syscall 270
//   is named `pselect`, not `pselect6`, so pselect6 fell to the default action (EPERM) and glibc's
//   select(), which is pselect6 on x86-64, failed: the PTY helper's select.select, so no terminal
//   and no minimal preset. Each rule naming pselect6 also names `pselect` (GVISOR_ALIASES): the
//   same syscall runc allows, nothing more. The other names runsc drops are other architectures'
//   or syscalls this gVisor does not implement (openat2, landlock_*, futex_waitv, process_mrelease,
//   memfd_secret), which are refused either way.

import { readFileSync } from 'node:fs';
import type { SandboxRuntime } from '../runtimes.ts';

const text = readFileSync(new URL('./seccomp.json', import.meta.url), 'utf8');
const profile = JSON.parse(text) as { defaultAction?: unknown; syscalls?: unknown };
if (profile.defaultAction !== 'SCMP_ACT_ERRNO' || !Array.isArray(profile.syscalls))
  throw new Error('host/sandbox/docker/seccomp.json is not a default-deny seccomp profile');

/** The profile as `SecurityOpt: ['seccomp=' + SECCOMP_PROFILE]` takes it (JSON, one line). */
export const SECCOMP_PROFILE = JSON.stringify(profile);

type Rule = { names: string[]; action: string; errnoRet?: number };

/** Docker's name of a syscall → gVisor's name of the same syscall, where they differ (the header). */
const GVISOR_ALIASES: Record<string, string> = { pselect6: 'pselect' };

const withAliases = (rule: Rule): Rule => {
  const aliases = rule.names.flatMap((name) => GVISOR_ALIASES[name] ?? []);
  return aliases.length === 0 ? rule : { ...rule, names: [...rule.names, ...aliases] };
};

const gvisorRules = (rules: Rule[]): Rule[] => {
  const clone3 = rules.findIndex(
    (rule) => rule.names.length === 1 && rule.names[0] === 'clone3' && rule.action === 'SCMP_ACT_ERRNO',
  );
  if (clone3 < 0) throw new Error('seccomp.json has no clone3 rule to adapt for gVisor');
  if (!rules.some((rule) => rule.action === 'SCMP_ACT_ALLOW' && rule.names.includes('pselect6')))
    throw new Error('seccomp.json allows no pselect6 to name for gVisor');
  return rules.map((rule, i) =>
    i === clone3 ? { ...rule, action: 'SCMP_ACT_ALLOW', errnoRet: undefined } : withAliases(rule),
  );
};

/** The profile for gVisor: clone3 allowed, pselect6 also by gVisor's name (see the header). */
const GVISOR_PROFILE = JSON.stringify({ ...profile, syscalls: gvisorRules(profile.syscalls as Rule[]) });

/** The profile a container under `runtime` runs with. */
export const seccompFor = (runtime: SandboxRuntime | undefined): string =>
  runtime === 'gvisor' ? GVISOR_PROFILE : SECCOMP_PROFILE;
