// Which sandbox runtime (host/sandbox/runtimes.ts) an agent runs under, checked at its creation:
// the runtime it asks for (`sandbox.runtime`; default runc) must be one its tenant may use (the
// operator's setting, DSH_GVISOR_TENANTS) and one the sandbox provider's engine offers. Refused
// with RUNTIME_NOT_ALLOWED or RUNTIME_UNAVAILABLE before anything is stored, so no agent exists
// whose first call would fail for it.
import { SandboxError } from '../errors.ts';
import { DEFAULT_RUNTIME, runtimeUnavailable, type SandboxRuntime } from '../sandbox/runtimes.ts';
import type { SandboxProvider } from '../sandbox/types.ts';

/** The runtimes each tenant may ask for besides the default (which every tenant may use). */
export type RuntimeAccess = (tenantId: string) => readonly SandboxRuntime[];

/** From the operator's setting: `*` for every tenant, else the listed tenant ids, may use gVisor. */
export const gvisorAccess =
  (tenants: '*' | readonly string[]): RuntimeAccess =>
  (tenantId) =>
    tenants === '*' || tenants.includes(tenantId) ? ['gvisor'] : [];

/** No tenant may ask for anything but the default. */
export const defaultOnly: RuntimeAccess = () => [];

/** The runtimes the provider offers: the default alone when it cannot tell. */
export const offeredBy = async (provider: SandboxProvider): Promise<readonly SandboxRuntime[]> =>
  provider.runtimes ? provider.runtimes() : [DEFAULT_RUNTIME];

/** Refuses a runtime the tenant may not use, then one the provider does not offer. */
export async function checkRuntime(
  runtime: SandboxRuntime | undefined,
  tenantId: string,
  access: RuntimeAccess,
  provider: SandboxProvider,
): Promise<void> {
  if (runtime === undefined || runtime === DEFAULT_RUNTIME) return;
  const allowed = [DEFAULT_RUNTIME, ...access(tenantId)];
  if (!allowed.includes(runtime))
    throw new SandboxError(
      'RUNTIME_NOT_ALLOWED',
      `This tenant may not run sandboxes under "${runtime}" (it may use ${allowed.join(', ')}); ask the operator to allow it (DSH_GVISOR_TENANTS), or leave sandbox.runtime out.`,
      { data: { runtime, allowed } },
    );
  const offered = await offeredBy(provider);
  if (!offered.includes(runtime)) throw runtimeUnavailable(runtime, offered);
}
