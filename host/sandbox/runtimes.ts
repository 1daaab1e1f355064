// The container runtimes an agent's sandbox may run under, as the API names them: `runc` (the
// engine's default, always there) and `gvisor` (gVisor's `runsc`, where the engine offers it).
// A provider says which ones its engine offers (SandboxProvider.runtimes); the service decides
// which ones a tenant may ask for (host/agents/sandbox-runtime.ts). Vocabulary only: no Docker.
import { SandboxError } from '../errors.ts';

export const SANDBOX_RUNTIMES = ['runc', 'gvisor'] as const;
export type SandboxRuntime = (typeof SANDBOX_RUNTIMES)[number];

/** What an agent gets when it asks for none, and what every engine offers. */
export const DEFAULT_RUNTIME: SandboxRuntime = 'runc';

/** The engine does not offer `runtime`: what it offers, and what the operator can do about it. */
export function runtimeUnavailable(
  runtime: SandboxRuntime,
  offered: readonly SandboxRuntime[],
): SandboxError {
  return new SandboxError(
    'RUNTIME_UNAVAILABLE',
    `The sandbox runtime "${runtime}" is not offered by this service's Docker engine (it offers ${offered.join(', ')}); ask for one of those, or have the operator register it with the engine (see the README, "Deploying with gVisor").`,
    { data: { runtime, offered: [...offered] } },
  );
}
