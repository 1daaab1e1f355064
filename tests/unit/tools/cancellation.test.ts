import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import { createRegistry, defineTool } from '../../../host/tools/index.ts';
import { agent, call, tick } from './helpers.ts';

const slow = (onStart: () => void, honour = true, seen: { aborted?: boolean } = {}) =>
  defineTool({
    name: 'slow',
    description: 'd',
    parameters: v.object({}),
    output: { schema: v.string() },
    execute: (_a, exec) =>
      new Promise<string>((resolve, reject) => {
        onStart();
        const timer = setTimeout(() => resolve('done'), 200);
        if (honour)
          exec.signal.addEventListener('abort', () => {
            seen.aborted = true;
            clearTimeout(timer);
            reject(exec.signal.reason);
          });
        else
          exec.signal.addEventListener('abort', () => {
            clearTimeout(timer);
            resolve('finished anyway');
          });
      }),
  });

describe('cancellation', () => {
  it('cancellation before dispatch is ABORTED_BEFORE_DISPATCH and the body never runs', async () => {
    const registry = createRegistry();
    let started = false;
    registry.global.register(
      slow(() => {
        started = true;
      }),
    );
    const controller = new AbortController();
    controller.abort();
    const [r] = await registry.global.execute([call('1', 'slow')], { agent, signal: controller.signal });
    expect(r?.error?.code).toBe('ABORTED_BEFORE_DISPATCH');
    expect(started).toBe(false);
  });

  it('cancellation while waiting in a pre-execute listener is ABORTED_BEFORE_DISPATCH', async () => {
    const registry = createRegistry();
    let started = false;
    registry.global.register(
      slow(() => {
        started = true;
      }),
    );
    const controller = new AbortController();
    registry.global.on('tools/pre-execute', async () => {
      controller.abort();
      await tick();
      return undefined;
    });
    const [r] = await registry.global.execute([call('1', 'slow')], { agent, signal: controller.signal });
    expect(r?.error?.code).toBe('ABORTED_BEFORE_DISPATCH');
    expect(started).toBe(false);
  });

  it('cancellation after the body started is ABORTED, and the body saw exec.signal', async () => {
    const registry = createRegistry();
    const controller = new AbortController();
    registry.global.register(slow(() => setTimeout(() => controller.abort(), 5)));
    const [r] = await registry.global.execute([call('1', 'slow')], { agent, signal: controller.signal });
    expect(r?.error).toEqual({ code: 'ABORTED', message: 'Tool slow was cancelled.' });
  });

  it('cancellation replaces even a successful outcome once the body started', async () => {
    const registry = createRegistry();
    const controller = new AbortController();
    registry.global.register(slow(() => setTimeout(() => controller.abort(), 5), false));
    const [r] = await registry.global.execute([call('1', 'slow')], { agent, signal: controller.signal });
    expect(r?.error?.code).toBe('ABORTED');
    expect(r?.value).toBeUndefined();
  });

  it('a tool failure after cancellation stays TOOL_FAILED (more specific than ABORTED)', async () => {
    const registry = createRegistry();
    const controller = new AbortController();
    registry.global.register(
      defineTool({
        name: 'f',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.null() },
        execute: () => {
          controller.abort();
          throw new Error('disk full');
        },
      }),
    );
    const [r] = await registry.global.execute([call('1', 'f')], { agent, signal: controller.signal });
    expect(r?.error).toEqual({ code: 'TOOL_FAILED', message: 'disk full' });
  });

  it('a denial stays DENIED even when the caller also cancelled', async () => {
    const registry = createRegistry();
    registry.global.register(slow(() => {}));
    const controller = new AbortController();
    registry.global.on('tools/pre-execute', () => {
      controller.abort();
      return { kind: 'deny', reason: 'not today' };
    });
    const [r] = await registry.global.execute([call('1', 'slow')], { agent, signal: controller.signal });
    expect(r?.error?.code).toBe('DENIED');
  });

  it('a wrapper may replace the signal but the caller signal still reaches the body', async () => {
    const registry = createRegistry();
    const controller = new AbortController();
    const seen: { aborted?: boolean } = {};
    registry.global.register(slow(() => setTimeout(() => controller.abort(), 5), true, seen));
    registry.global.on('tools/execute', (view, next) => {
      view.signal = new AbortController().signal;
      return next();
    });
    const [r] = await registry.global.execute([call('1', 'slow')], { agent, signal: controller.signal });
    expect(r?.error?.code).toBe('ABORTED');
    expect(seen.aborted).toBe(true);
  });

  it('an abort reason that is a SandboxError keeps its code', async () => {
    const registry = createRegistry();
    registry.global.register(slow(() => {}));
    registry.global.on('tools/execute', (view, next) => {
      const c = new AbortController();
      view.signal = c.signal;
      setTimeout(
        () => c.abort(new SandboxError('SHUTTING_DOWN', 'The service is restarting; retry shortly.')),
        5,
      );
      return next();
    });
    const [r] = await registry.global.execute([call('1', 'slow')], { agent });
    expect(r?.error?.code).toBe('SHUTTING_DOWN');
  });
});
