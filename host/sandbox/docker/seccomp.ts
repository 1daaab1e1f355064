// The seccomp profile every sandbox container runs under: Docker's default profile of the engine's
// release minus io_uring, memfd_secret, POSIX message queues and the key, bpf and perf syscalls
// (seccomp.json, written by scripts/seccomp/generate.ts, which says why each one goes). Docker's
// default already refuses userfaultfd and the key syscalls outright, and allows bpf,
// perf_event_open, mount, unshare, setns and namespace flags of clone only to a container holding
// CAP_SYS_ADMIN, which ours never does. Loaded and checked once, when this module loads.

import { readFileSync } from 'node:fs';

const text = readFileSync(new URL('./seccomp.json', import.meta.url), 'utf8');
const profile = JSON.parse(text) as { defaultAction?: unknown; syscalls?: unknown };
if (profile.defaultAction !== 'SCMP_ACT_ERRNO' || !Array.isArray(profile.syscalls))
  throw new Error('host/sandbox/docker/seccomp.json is not a default-deny seccomp profile');

/** The profile as `SecurityOpt: ['seccomp=' + SECCOMP_PROFILE]` takes it (JSON, one line). */
export const SECCOMP_PROFILE = JSON.stringify(profile);
