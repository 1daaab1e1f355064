// The tools of the image a runtime needs instead of the usual ones, put first on PATH at start.
// Under gVisor (the host sets SANDBOXD_RUNTIME=gvisor: host/sandbox/docker/node-state.ts), GNU
// coreutils' ls and stat always pass AT_NO_AUTOMOUNT to statx, which gVisor's statx of runsc
// release 20221219 refuses with EINVAL (only AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH and the sync flags
// pass), so `ls -l`, `ls DIR` and `stat` fail there; busybox's ls and stat, linked in
// GVISOR_BIN by the image (Dockerfile.sandbox), stat with newfstatat and work. Every program
// sandboxd starts inherits process.env.PATH (exec.ts childEnv), so this runs before anything is
// spawned. Under runc, or with SANDBOXD_RUNTIME unset (local runs), PATH is left as it is.

/** The image's folder of busybox ls and stat for gVisor. */
export const GVISOR_BIN = '/usr/lib/dsh/gvisor-bin';

/** PATH for `runtime` (SANDBOXD_RUNTIME): GVISOR_BIN first under gVisor, else `path` unchanged. */
export const runtimePath = (runtime: string | undefined, path: string | undefined): string | undefined => {
  if (runtime !== 'gvisor') return path;
  const rest = (path ?? '/usr/local/bin:/usr/bin:/bin').split(':').filter((dir) => dir !== GVISOR_BIN);
  return [GVISOR_BIN, ...rest].join(':');
};
