// Entry point of the docker provider, its embedded node (node.ts), and of its workspace stores (workspaces.ts: loop file systems
// with a size limit, plain volumes, and the probe that says whether loops work here). Loads
// dockerode: import it only where Docker is wanted (the memory provider and the ports never pull
// it in).

export type { AdoptOptions } from './adopt.ts';
export {
  containerConfig,
  DOCKER_DEFAULT_LIMITS,
  DOCKER_DEFAULT_MAXIMA,
  LABEL_AGENT,
  LABEL_INSTANCE,
  LABEL_MANAGED,
  LABEL_POOL,
  LABEL_TENANT,
  resolveLimits,
} from './config.ts';
export type { DockerNode, DockerNodeOptions } from './node.ts';
export { createDockerNode } from './node.ts';
export type { DockerProvider, DockerProviderOptions } from './provider.ts';
export { createDockerProvider } from './provider.ts';
export type { ConnectSandboxd, SandboxdSession } from './session.ts';
export { createLoopWorkspaces, type LoopOptions } from './workspaces/loop.ts';
export { MIN_WORKSPACE_BYTES } from './workspaces/loop-state.ts';
export { loopUnavailable } from './workspaces/probe.ts';
export { createVolumeWorkspaces } from './workspaces/volume.ts';
export type { WorkspaceMount, WorkspaceStore, WorkspaceUsage } from './workspaces.ts';
