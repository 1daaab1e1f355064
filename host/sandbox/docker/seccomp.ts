// The seccomp profile every sandbox container runs under: Docker's default profile of the engine's
// release minus io_uring, memfd_secret, POSIX message queues and the key, bpf and perf syscalls
// (seccomp.json, written by scripts/seccomp/generate.ts, which says why each one goes). Docker's
// default already refuses userfaultfd and the key syscalls outright, and allows bpf,
// perf_event_open, mount, unshare, setns and namespace flags of clone only to a container holding
// CAP_SYS_ADMIN, which ours never does. Loaded and checked once, when this module loads.
// Under gVisor (runsc --oci-seccomp) the same profile is enforced by gVisor's kernel with one
// change (seccompFor): gVisor answers a rule's SCMP_ACT_ERRNO with EPERM whatever its errnoRet,
// so the ENOSYS that tells glibc to fall back from clone3 to clone became EPERM and no thread could
// start (Node, Python); clone3 is let through to gVisor, which does not implement it (ENOSYS), and
// clone keeps its rule refusing namespace flags.

import { readFileSync } from 'node:fs';
import type { SandboxRuntime } from '../runtimes.ts';

const text = readFileSync(new URL('./seccomp.json', import.meta.url), 'utf8');
const profile = JSON.parse(text) as { defaultAction?: unknown; syscalls?: unknown };
if (profile.defaultAction !== 'SCMP_ACT_ERRNO' || !Array.isArray(profile.syscalls))
  throw new Error('host/sandbox/docker/seccomp.json is not a default-deny seccomp profile');

/** The profile as `SecurityOpt: ['seccomp=' + SECCOMP_PROFILE]` takes it (JSON, one line). */
export const SECCOMP_PROFILE = JSON.stringify(profile);

type Rule = { names: string[]; action: string; errnoRet?: number };

/** The profile for gVisor: clone3 allowed instead of refused with ENOSYS (see the header). */
const GVISOR_PROFILE = JSON.stringify({
  ...profile,
  syscalls: (profile.syscalls as Rule[]).map((rule) =>
    rule.names.length === 1 && rule.names[0] === 'clone3' && rule.action === 'SCMP_ACT_ERRNO'
      ? { ...rule, action: 'SCMP_ACT_ALLOW', errnoRet: undefined }
      : rule,
  ),
});
if (GVISOR_PROFILE === SECCOMP_PROFILE)
  throw new Error('seccomp.json has no clone3 rule to adapt for gVisor');

/** The profile a container under `runtime` runs with. */
export const seccompFor = (runtime: SandboxRuntime | undefined): string =>
  runtime === 'gvisor' ? GVISOR_PROFILE : SECCOMP_PROFILE;
