// Writes host/sandbox/docker/seccomp.json, the seccomp profile of every sandbox container: Docker's
// default profile (moby profiles/seccomp/default.json at the engine's release, v20.10.24 here) with
// the syscalls below taken out of every allow rule and refused by two rules of our own.
// Run once per engine upgrade: node scripts/seccomp/generate.ts <path to moby's default.json>
// (for example `git show v20.10.24:profiles/seccomp/default.json` in a clone of moby/moby).

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Refused with ENOSYS (38), so that programs take their "this kernel has no such feature" path. */
export const UNSUPPORTED = [
  // io_uring: a second syscall surface behind one fd, the source of a long run of kernel LPEs
  // (CVE-2022-29582, CVE-2023-2598, CVE-2024-0582, ...); newer Docker releases drop it too.
  'io_uring_setup',
  'io_uring_enter',
  'io_uring_register',
  // Secret memory areas (5.14+): memory hidden from the kernel's own inspection; nothing here needs it.
  'memfd_secret',
  // Already outside Docker's allow list; named so that the refusal survives a profile update.
  'userfaultfd',
  // POSIX message queues: closed (issue 11: writable storage beyond /workspace and /tmp).
  'mq_open',
  'mq_unlink',
  'mq_timedsend',
  'mq_timedreceive',
  'mq_notify',
  'mq_getsetattr',
];
/** Refused with EPERM, as Docker's default does for a container without the capability they need. */
export const REFUSED = ['keyctl', 'add_key', 'request_key', 'bpf', 'perf_event_open'];

interface Rule {
  names: string[];
  action: string;
  errnoRet?: number;
  [key: string]: unknown;
}

export const deriveProfile = (base: { syscalls: Rule[]; [key: string]: unknown }) => {
  const out = new Set([...UNSUPPORTED, ...REFUSED]);
  const syscalls = base.syscalls
    .map((r) => ({ ...r, names: r.names.filter((n) => !out.has(n)) }))
    .filter((r) => r.names.length > 0);
  syscalls.push(
    { names: UNSUPPORTED, action: 'SCMP_ACT_ERRNO', errnoRet: 38 },
    { names: REFUSED, action: 'SCMP_ACT_ERRNO', errnoRet: 1 },
  );
  return { ...base, syscalls };
};

if (process.argv[1] === import.meta.filename) {
  const src = process.argv[2];
  if (!src) throw new Error('usage: node scripts/seccomp/generate.ts <moby default.json>');
  const profile = deriveProfile(JSON.parse(readFileSync(src, 'utf8')));
  const target = join(import.meta.dirname, '..', '..', 'host', 'sandbox', 'docker', 'seccomp.json');
  writeFileSync(target, `${JSON.stringify(profile, null, 1)}\n`);
  console.log(`wrote ${target}`);
}
