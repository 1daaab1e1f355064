// Makes sure gVisor's `runsc` is on this machine, for the sandboxes that ask for runtime "gvisor"
// and for the tests that run the suites under it (on an engine of their own). Order: a runsc on
// PATH; otherwise, as root on Debian, install Debian's `runsc` package (once, as docker-engine.ts
// installs docker.io); otherwise stop with a message saying what to install. It never touches an
// engine that already runs (other services may share it): registering runsc with an engine is its
// daemon.json's business (RUNSC_DAEMON_CONFIG), which setup writes only for an engine it starts.
import { existsSync } from 'node:fs';
import { log, run, which } from './exec.ts';

/**
 * runsc's arguments as a Docker runtime on these machines: ptrace (no KVM in a VM), the link's unix
 * socket reachable from inside (`--host-uds=open`: sandboxd dials the control plane's socket in
 * its read-only link folder), gVisor's own empty network (the containers have network none; runsc
 * cannot run in the network namespace Docker gives a `none` container here), and our seccomp
 * profile applied inside the sandbox too (`--oci-seccomp`; runsc ignores it otherwise).
 */
export const RUNSC_ARGS = ['--platform=ptrace', '--host-uds=open', '--network=none', '--oci-seccomp'];

/** The `runtimes` entry of a daemon.json that registers runsc (at `path`) as `runsc`. */
export const runscDaemonConfig = (path: string): { runtimes: Record<string, unknown> } => ({
  runtimes: { runsc: { path, runtimeArgs: RUNSC_ARGS } },
});

/** The path of runsc, installed from Debian when missing. */
export const ensureRunsc = async (): Promise<string> => {
  const found = await which('runsc');
  if (found) return found;
  if (process.getuid?.() !== 0 || !existsSync('/etc/debian_version'))
    throw new Error('no runsc (gVisor): install it (Debian: apt-get install runsc) to offer runtime gvisor');
  log('no runsc: installing Debian runsc (gVisor) for runtime gvisor (one time) ...');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  await run('apt-get', ['update', '-qq'], { env, inherit: true });
  const install = await run('apt-get', ['install', '-y', '-qq', '--no-install-recommends', 'runsc'], {
    env,
    inherit: true,
  });
  const installed = await which('runsc');
  if (install.code !== 0 || !installed)
    throw new Error('apt-get install runsc failed; install gVisor by hand');
  return installed;
};
