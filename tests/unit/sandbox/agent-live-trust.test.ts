// An agent's session is handed to its calls only once the tenant's interception CA is on its way to
// sandboxd (agent-live.ts track, egress/proxy attach's `trusted`): a command started by the
// session's first call must find the CA in the bundle it reads at its start. And a session whose
// egress has nothing to trust is handed over at once.
import { describe, expect, it } from 'vitest';
import type { AttachedEgress } from '../../../host/egress/proxy/index.ts';
import { type Agent, type Sessions, track } from '../../../host/sandbox/docker/agent-live.ts';
import type { Live } from '../../../host/sandbox/docker/session.ts';
import type { SandboxdEgress } from '../../../host/sandbox/sandboxd/client.ts';

const never = new Promise<never>(() => {});
const fakeLive = (egress: SandboxdEgress | undefined): Live =>
  ({ session: { egress, closed: never }, channel: { closed: never } }) as unknown as Live;
const fakeEgress = { accept: () => never, trust: async () => {} } as unknown as SandboxdEgress;

const sessions = (egress: Sessions['egress']): Sessions =>
  ({ agents: new Map(), onError: () => {}, egress }) as unknown as Sessions;
const agent = (): Agent => ({ agentId: 'a1', limits: {} }) as unknown as Agent;

describe("an agent's session and its tenant's CA", () => {
  it('is handed to calls once the CA was sent, not before', async () => {
    const trusted = Promise.withResolvers<void>();
    const attached: string[] = [];
    const s = sessions((agentId): AttachedEgress => {
      attached.push(agentId);
      return { stop: () => {}, trusted: trusted.promise };
    });
    const a = agent();
    const live = fakeLive(fakeEgress);
    const handed = track(s, a, Promise.resolve(live));
    expect(a.live).toBe(handed); // later calls share the same wait
    let got: Live | undefined;
    void handed.then((l) => (got = l));
    await new Promise((r) => setTimeout(r, 20));
    expect(attached).toEqual(['a1']);
    expect(got).toBeUndefined(); // the CA is not sent yet: no call may use the session
    trusted.resolve();
    expect(await handed).toBe(live);
  });

  it('is handed over at once without an egress to serve', async () => {
    const a = agent();
    const live = fakeLive(undefined);
    expect(await track(sessions(undefined), a, Promise.resolve(live))).toBe(live);
    const b = agent();
    const other = fakeLive(fakeEgress);
    expect(await track(sessions(undefined), b, Promise.resolve(other))).toBe(other);
  });

  it('forgets a session that failed to open, so the next call opens a new one', async () => {
    const a = agent();
    const failed = track(sessions(undefined), a, Promise.reject(new Error('no sandbox')));
    await expect(failed).rejects.toThrow('no sandbox');
    expect(a.live).toBeUndefined();
  });
});
