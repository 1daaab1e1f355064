// Entry point of the docker provider. Loads dockerode: import it only where Docker is wanted
// (the memory provider and the ports never pull it in).

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
export type { AdoptOptions, DockerProvider, DockerProviderOptions } from './provider.ts';
export { createDockerProvider } from './provider.ts';
export type { ConnectSandboxd, SandboxdSession } from './session.ts';
