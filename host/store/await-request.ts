// One host request from creation to settlement: the shape every client-answered step shares (an
// `ask` approval, a remote tool call, a workflow's subagent). Invariant: a wait that ends by abort
// cancels its request, so nothing stays pending for a caller that is gone.
import type { HostRequest, RequestStore } from './types.ts';

/** Creates the request and resolves with it settled (answered, expired or cancelled); rejects on abort. */
export const awaitRequest = async (
  store: RequestStore,
  input: Parameters<RequestStore['create']>[0],
  signal?: AbortSignal,
): Promise<HostRequest> => {
  const request = store.create(input);
  try {
    return await store.wait(request.id, signal);
  } catch (error) {
    store.cancel(request.id);
    throw error;
  }
};
