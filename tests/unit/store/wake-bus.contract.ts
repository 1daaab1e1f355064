// The WakeBus contract (host/store/wake-port.ts), run on every backend's bus: the in-process one of
// libsql and memory (wake-bus.test.ts) and PostgreSQL's (wake-bus.postgres.test.ts). Within one
// process every bus behaves alike: a publish reaches this process's subscribers of its topic
// synchronously, once each; a subscriber that throws is told to onError and the others still hear
// it; an unsubscribed listener hears nothing more; publish never rejects.
import { afterEach, describe, expect, it } from 'vitest';
import type { WakeBus } from '../../../host/store/wake-port.ts';

export type OpenWakeBus = (
  onError: (error: unknown) => void,
) => Promise<{ bus: WakeBus; close(): Promise<void> }>;

export const runWakeBusContract = (name: string, open: OpenWakeBus): void => {
  describe(`WakeBus contract (${name})`, () => {
    const opened: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const close of opened.splice(0)) await close();
    });
    const openBus = async () => {
      const errors: unknown[] = [];
      const { bus, close } = await open((e) => errors.push(e));
      opened.push(close);
      return { bus, errors };
    };

    it("tells this process's subscribers of the topic synchronously, once each", async () => {
      const { bus } = await openBus();
      const heard: string[] = [];
      bus.subscribe('mail', (id) => heard.push(`mail ${id}`));
      bus.subscribe('key', (id) => heard.push(`key ${id}`));
      const sent = bus.publish('mail', 'agt_1');
      expect(heard).toEqual(['mail agt_1']);
      await sent;
      await bus.publish('key', 'key_1');
      expect(heard).toEqual(['mail agt_1', 'key key_1']);
    });

    it('reports a subscriber that throws, and the others still hear the wake-up', async () => {
      const { bus, errors } = await openBus();
      const heard: string[] = [];
      bus.subscribe('agent', () => {
        throw new Error('boom');
      });
      bus.subscribe('agent', (id) => heard.push(id));
      await expect(bus.publish('agent', 'agt_1')).resolves.toBeUndefined();
      expect(heard).toEqual(['agt_1']);
      expect(errors).toHaveLength(1);
    });

    it('tells an unsubscribed listener nothing more', async () => {
      const { bus } = await openBus();
      const heard: string[] = [];
      const off = bus.subscribe('config', (id) => heard.push(id));
      await bus.publish('config', 'ten_1');
      off();
      await bus.publish('config', 'ten_2');
      expect(heard).toEqual(['ten_1']);
    });
  });
};
