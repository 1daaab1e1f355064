import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { SandboxError } from '../../../host/errors.ts';
import { createMemoryEventLog } from '../../../host/store/memory.ts';
import { withContent } from '../../../host/tools/content.ts';
import {
  type CallView,
  createRegistry,
  type Decision,
  defineTool,
  type ExecuteWrapper,
} from '../../../host/tools/index.ts';
import { agent, call, echoTool } from './helpers.ts';

const setup = () => {
  const registry = createRegistry();
  registry.global.register(echoTool('echo'));
  return { registry, scope: registry.global.child('agent') };
};
const run = async (scope: ReturnType<typeof setup>['scope'], name = 'echo', args: unknown = { text: 'hi' }) =>
  (await scope.execute([call('c1', name, args)], { agent }))[0];

describe('pipeline order and errors', () => {
  it('invalid arguments fail with INVALID_ARGUMENTS listing each issue with its path, before any policy', async () => {
    const { scope } = setup();
    let policyRan = false;
    scope.on('tools/pre-execute', () => {
      policyRan = true;
      return undefined;
    });
    const r = await run(scope, 'echo', { text: 42 });
    expect(r?.error).toEqual({
      code: 'INVALID_ARGUMENTS',
      message:
        'Invalid arguments for echo: text: Invalid type: Expected string but received 42. Fix them and call again.',
    });
    expect(r?.content).toEqual([{ type: 'text', text: `Error: ${r?.error?.message}` }]);
    expect(policyRan).toBe(false);
  });

  it('the stages run in seed order', async () => {
    const registry = createRegistry();
    const order: string[] = [];
    registry.global.register(
      defineTool({
        name: 't',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.string() },
        execute: () => {
          order.push('body');
          return 'v';
        },
        projectContent: (_a, _v, c) => {
          order.push('projectContent');
          return c;
        },
        finalizeContent: (_a, c) => {
          order.push('finalizeContent');
          return c;
        },
      }),
    );
    const s = registry.global;
    s.on('tools/pre-execute', () => {
      order.push('pre');
      return undefined;
    });
    s.guard(() => {
      order.push('guard');
      return undefined;
    });
    s.on('tools/execute', async (_view, next) => {
      order.push('wrap:in');
      const o = await next();
      order.push('wrap:out');
      return o;
    });
    s.on('tools/post-execute', () => {
      order.push('post');
      return undefined;
    });
    s.on('tools/result', () => {
      order.push('result');
    });
    await s.execute([call('1', 't')], { agent });
    expect(order).toEqual([
      'pre',
      'guard',
      'wrap:in',
      'body',
      'projectContent',
      'wrap:out',
      'post',
      'finalizeContent',
      'result',
    ]);
  });

  it('an unknown hook phase fails at registration', () => {
    const { scope } = setup();
    expect(() => scope.on('tools/before' as never, (() => undefined) as never)).toThrow(
      expect.objectContaining({ code: 'CONFIG_INVALID' }),
    );
  });

  it('a thrown body becomes a TOOL_FAILED result the model sees as exactly "Error: <message>"', async () => {
    const registry = createRegistry();
    registry.global.register(
      defineTool({
        name: 'boom',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.null() },
        execute: () => {
          throw new Error('disk on fire');
        },
      }),
    );
    const [r] = await registry.global.execute([call('1', 'boom')], { agent });
    expect(r).toMatchObject({
      ok: false,
      content: [{ type: 'text', text: 'Error: disk on fire' }],
      error: { code: 'TOOL_FAILED', message: 'disk on fire' },
    });
    expect(r?.value).toBeUndefined();
  });

  it('a SandboxError thrown by a body keeps its code', async () => {
    const registry = createRegistry();
    registry.global.register(
      defineTool({
        name: 'rd',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.null() },
        execute: () => {
          throw new SandboxError('FILE_NOT_FOUND', 'No such file /x; list the directory first.');
        },
      }),
    );
    const [r] = await registry.global.execute([call('1', 'rd')], { agent });
    expect(r?.error?.code).toBe('FILE_NOT_FOUND');
  });

  it('the result has the API shape with a duration', async () => {
    const { scope } = setup();
    const r = await run(scope);
    expect(Object.keys(r ?? {})).toEqual(['id', 'name', 'ok', 'content', 'value', 'durationMs']);
    expect(r?.durationMs).toBeGreaterThanOrEqual(0);
    expect(Object.isFrozen(r)).toBe(true);
  });
});

describe('tools/pre-execute and guards', () => {
  it('a deny decision becomes DENIED with the reason for the model and userReason only in the error field', async () => {
    const { scope } = setup();
    scope.on('tools/pre-execute', () => ({
      kind: 'deny',
      reason: 'echo is disabled here',
      userReason: 'Admin turned echo off',
    }));
    const r = await run(scope);
    expect(r?.content).toEqual([{ type: 'text', text: 'Error: echo is disabled here' }]);
    expect(r?.error).toEqual({
      code: 'DENIED',
      message: 'echo is disabled here',
      userReason: 'Admin turned echo off',
    });
  });

  it('later pre-execute listeners see earlier decisions and may change them', async () => {
    const { scope } = setup();
    const seen: Decision[] = [];
    scope.on('tools/pre-execute', () => ({ kind: 'deny', reason: 'first says no' }));
    scope.on('tools/pre-execute', (_c, current) => {
      seen.push(current);
      return { kind: 'allow' };
    });
    const r = await run(scope);
    expect(seen).toEqual([{ kind: 'deny', reason: 'first says no' }]);
    expect(r?.ok).toBe(true);
  });

  it('a guard reason denies and no listener can turn it back', async () => {
    const { scope } = setup();
    scope.guard((c: CallView) => (c.name === 'echo' ? 'guards never allow echo' : undefined));
    scope.on('tools/pre-execute', () => ({ kind: 'allow' }));
    const r = await run(scope);
    expect(r?.error).toEqual({ code: 'DENIED', message: 'guards never allow echo' });
  });

  it('a throwing pre-execute listener fails closed (DENIED, body not run)', async () => {
    const registry = createRegistry();
    let ran = false;
    registry.global.register(
      defineTool({
        name: 't',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.null() },
        execute: () => {
          ran = true;
          return null;
        },
      }),
    );
    registry.global.on('tools/pre-execute', () => {
      throw new Error('rules db down');
    });
    const [r] = await registry.global.execute([call('1', 't')], { agent });
    expect(r?.error?.code).toBe('DENIED');
    expect(ran).toBe(false);
  });

  it('listeners see frozen validated arguments', async () => {
    const { scope } = setup();
    let frozen = false;
    scope.on('tools/pre-execute', (c) => {
      frozen = Object.isFrozen(c.arguments);
      return undefined;
    });
    await run(scope);
    expect(frozen).toBe(true);
  });

  it('hooks of a child scope do not affect the parent', async () => {
    const { registry, scope } = setup();
    scope.on('tools/pre-execute', () => ({ kind: 'deny', reason: 'agent only' }));
    const [parent] = await registry.global.execute([call('1', 'echo', { text: 'x' })], { agent });
    expect(parent?.ok).toBe(true);
    expect((await run(scope))?.ok).toBe(false);
  });

  it('disposing a listener removes it', async () => {
    const { scope } = setup();
    const off = scope.on('tools/pre-execute', () => ({ kind: 'deny', reason: 'no' }));
    off();
    expect((await run(scope))?.ok).toBe(true);
  });
});

describe('tools/execute wrappers', () => {
  it('a wrapper may observe and transform the outcome', async () => {
    const { scope } = setup();
    scope.on('tools/execute', async (_view, next) => {
      const o = await next();
      return o.ok ? { ...o, content: [{ type: 'text', text: 'wrapped' }] } : o;
    });
    expect((await run(scope))?.content).toEqual([{ type: 'text', text: 'wrapped' }]);
  });

  /** A tool that fails with SANDBOX_UNAVAILABLE `failures` times, then answers; counts its runs. */
  const flaky = (failures: number) => {
    const runs = { count: 0 };
    const definition = defineTool({
      name: 'flaky',
      description: 'd',
      parameters: v.object({}),
      output: { schema: v.number() },
      execute: async (_args, exec) => {
        runs.count++;
        // Inner calls of every attempt are logged, under ids unique across attempts.
        await exec.callTool('echo', { text: `attempt ${runs.count}` });
        if (runs.count <= failures) throw new SandboxError('SANDBOX_UNAVAILABLE', 'The sandbox restarts.');
        return runs.count;
      },
    });
    return { definition, runs };
  };

  /** A retry policy: runs a call up to `times` more times while it fails with SANDBOX_UNAVAILABLE. */
  const retryTransient =
    (times: number): ExecuteWrapper =>
    async (_view, next) => {
      let outcome = await next();
      for (let i = 0; i < times && !outcome.ok && outcome.error.code === 'SANDBOX_UNAVAILABLE'; i++)
        outcome = await next();
      return outcome;
    };

  it('a retry policy reruns a transient failure; the log holds one call and one result counting the attempts', async () => {
    const log = createMemoryEventLog();
    const registry = createRegistry({ log });
    const { definition, runs } = flaky(2);
    registry.global.register(definition);
    registry.global.register(echoTool('echo'));
    registry.global.on('tools/execute', retryTransient(2));
    const [r] = await registry.global.execute([call('1', 'flaky')], { agent });
    expect(r).toMatchObject({ ok: true, value: 3, attempts: 3 });
    expect(runs.count).toBe(3);
    const events = await log.list(agent.sessionId);
    const root = events.filter((e) => e.parentCallId === undefined);
    expect(root.map((e) => [e.type, e.callId])).toEqual([
      ['tool.call', '1'],
      ['tool.result', '1'],
    ]);
    expect(root[1]?.data).toMatchObject({ ok: true, attempts: 3 });
    expect(
      events.filter((e) => e.parentCallId === '1' && e.type === 'tool.call').map((e) => e.callId),
    ).toEqual(['1.1', '1.2', '1.3']);
  });

  it('a retry gives up after its limit with the last failure', async () => {
    const registry = createRegistry();
    const { definition, runs } = flaky(5);
    registry.global.register(definition);
    registry.global.register(echoTool('echo'));
    registry.global.on('tools/execute', retryTransient(2));
    const [r] = await registry.global.execute([call('1', 'flaky')], { agent });
    expect(r).toMatchObject({ ok: false, error: { code: 'SANDBOX_UNAVAILABLE' }, attempts: 3 });
    expect(runs.count).toBe(3);
  });

  it('an attempt after cancellation does not start the body', async () => {
    const registry = createRegistry();
    const { definition, runs } = flaky(5);
    registry.global.register(definition);
    registry.global.register(echoTool('echo'));
    const controller = new AbortController();
    registry.global.on('tools/execute', async (_view, next) => {
      await next();
      controller.abort();
      return next();
    });
    const [r] = await registry.global.execute([call('1', 'flaky')], { agent, signal: controller.signal });
    expect(runs.count).toBe(1);
    expect(r?.error?.code).toBe('ABORTED_BEFORE_DISPATCH');
  });

  it('overlapping attempts are refused: next() again while one runs fails the call, the body runs once', async () => {
    const registry = createRegistry();
    const { definition, runs } = flaky(0);
    registry.global.register(definition);
    registry.global.register(echoTool('echo'));
    registry.global.on('tools/execute', async (_view, next) => {
      const [, second] = await Promise.allSettled([next(), next()]);
      if (second.status === 'rejected') throw second.reason;
      return second.value;
    });
    const [r] = await registry.global.execute([call('1', 'flaky')], { agent });
    expect(runs.count).toBe(1);
    expect(r?.error?.code).toBe('TOOL_FAILED');
    expect(r?.error?.message).toMatch(/before the previous attempt settled/);
  });

  it('a wrapper failure stays specific and the body does not run', async () => {
    const registry = createRegistry();
    let ran = false;
    registry.global.register(
      defineTool({
        name: 't',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.null() },
        execute: () => {
          ran = true;
          return null;
        },
      }),
    );
    registry.global.on('tools/execute', () => {
      throw new SandboxError('RATE_LIMITED', 'Too many calls; wait a minute.');
    });
    const [r] = await registry.global.execute([call('1', 't')], { agent });
    expect(r?.error?.code).toBe('RATE_LIMITED');
    expect(ran).toBe(false);
  });
});

describe('tools/post-execute, finalizeContent and tools/result', () => {
  it('post-execute may replace content and value', async () => {
    const { scope } = setup();
    scope.on('tools/post-execute', () => ({
      kind: 'replace',
      content: [{ type: 'text', text: '[redacted]' }],
      value: 'redacted',
    }));
    const r = await run(scope);
    expect(r?.content).toEqual([{ type: 'text', text: '[redacted]' }]);
    expect(r?.value).toBe('redacted');
  });

  it('replacing the content alone redacts: the value is for the in-memory caller only, never JSON', async () => {
    const { scope } = setup();
    scope.on('tools/post-execute', () => ({
      kind: 'replace',
      content: [{ type: 'text', text: '[redacted]' }],
    }));
    const r = await run(scope);
    expect(r?.redacted).toBe(true);
    expect(r?.value).toBeDefined();
    expect(JSON.parse(JSON.stringify(r))).not.toHaveProperty('value');
  });

  it('a later replace with a value ends the redaction', async () => {
    const { scope } = setup();
    scope.on('tools/post-execute', () => ({
      kind: 'replace',
      content: [{ type: 'text', text: '[redacted]' }],
    }));
    scope.on('tools/post-execute', () => ({ kind: 'replace', value: 'clean' }));
    const r = await run(scope);
    expect(r?.redacted).toBeUndefined();
    expect(JSON.parse(JSON.stringify(r))).toMatchObject({ value: 'clean' });
  });

  it('post-execute may block with feedback (DENIED)', async () => {
    const { scope } = setup();
    scope.on('tools/post-execute', () => ({ kind: 'block', feedback: 'output contained a secret' }));
    const r = await run(scope);
    expect(r?.content).toEqual([{ type: 'text', text: 'Error: output contained a secret' }]);
    expect(r?.error?.code).toBe('DENIED');
  });

  it('post-execute contexts are appended in listener order', async () => {
    const { scope } = setup();
    scope.on('tools/post-execute', () => ({ kind: 'attach', contexts: [{ type: 'text', text: 'ctx1' }] }));
    scope.on('tools/post-execute', () => ({ kind: 'attach', contexts: [{ type: 'text', text: 'ctx2' }] }));
    expect((await run(scope))?.content.map((p) => (p.type === 'text' ? p.text : ''))).toEqual([
      'hi',
      'ctx1',
      'ctx2',
    ]);
  });

  it('a failing post-execute policy fails the call', async () => {
    const { scope } = setup();
    scope.on('tools/post-execute', () => {
      throw new Error('scanner crashed');
    });
    const r = await run(scope);
    expect(r?.error?.code).toBe('TOOL_FAILED');
    expect(r?.error?.message).toContain('scanner crashed');
  });

  it('projectContent runs before post-execute and finalizeContent after it', async () => {
    const registry = createRegistry();
    registry.global.register(
      defineTool({
        name: 't',
        description: 'd',
        parameters: v.object({}),
        output: { schema: v.string() },
        execute: () => 'raw',
        projectContent: () => [{ type: 'text', text: 'projected' }],
        finalizeContent: (_a, content) => [...content, { type: 'text', text: 'final' }],
      }),
    );
    let seenByPolicy: unknown;
    registry.global.on('tools/post-execute', (_c, o) => {
      seenByPolicy = o.ok ? o.content : undefined;
      return undefined;
    });
    const [r] = await registry.global.execute([call('1', 't')], { agent });
    expect(seenByPolicy).toEqual([{ type: 'text', text: 'projected' }]);
    expect(r?.content).toEqual([
      { type: 'text', text: 'projected' },
      { type: 'text', text: 'final' },
    ]);
  });

  it('tools/result observes the frozen final result of every call, failed ones included, and cannot change it', async () => {
    const { scope } = setup();
    const seen: unknown[] = [];
    scope.on('tools/result', (_c, result) => {
      seen.push(result.ok);
      (result as { ok: boolean }).ok = !result.ok; // frozen: ignored in sloppy code, throws in strict
    });
    const [ok, bad] = await scope.execute([call('1', 'echo', { text: 'x' }), call('2', 'nope')], { agent });
    expect(seen).toEqual([true, false]);
    expect(ok?.ok).toBe(true);
    expect(bad?.ok).toBe(false);
  });
});

// Issue 10: arguments from outside are walked by validators, deepFreeze, policies and the log; the
// pipeline bounds their depth first, so `[[[…]]]` 100,000 deep is a clear error, not a stack overflow.
describe('argument depth', () => {
  const nest = (depth: number): unknown => {
    let value: unknown = 'leaf';
    for (let i = 0; i < depth; i++) value = [value];
    return value;
  };
  const setupAny = () => {
    const registry = createRegistry();
    registry.global.register(
      defineTool({
        name: 'take',
        description: 'Takes any JSON value and renders it.',
        parameters: v.object({ value: v.unknown() }),
        output: { schema: v.unknown() },
        execute: (args) => args.value,
      }),
    );
    return registry.global.child('agent');
  };

  it('refuses arguments nested more than 64 levels with INVALID_ARGUMENTS', async () => {
    const scope = setupAny();
    for (const depth of [64, 100_000]) {
      const r = await run(scope, 'take', { value: nest(depth) });
      expect(r?.error).toEqual({
        code: 'INVALID_ARGUMENTS',
        message:
          'Invalid arguments for take: they nest arrays or objects more than 64 levels deep. Flatten them and call again.',
      });
    }
    expect((await run(scope, 'take', { value: nest(63) }))?.ok).toBe(true);
  });

  it('renders a deep value compactly: pretty-printing it would be quadratic in its depth', async () => {
    const scope = setupAny();
    const deep = await run(scope, 'take', { value: nest(63) });
    const shown = deep?.content[0]?.type === 'text' ? deep.content[0].text : '';
    expect(shown).toBe(JSON.stringify(nest(63)));
    const small = await run(scope, 'take', { value: { a: [1] } });
    expect(small?.content).toEqual([{ type: 'text', text: '{\n  "a": [\n    1\n  ]\n}' }]);
  });
});

// Every tool's result is held to MAX_VALUE_DEPTH by the pipeline, whoever produced it (a builtin,
// a plugin, an MCP or remote server, a wrapper or a policy): before output validation and render
// walk it, and before the log or the API serialise it (recursively: 5,000 levels overflowed).
describe('result depth', () => {
  const nest = (depth: number): unknown => {
    let value: unknown = 'leaf';
    for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { k: value };
    return value;
  };
  const tooDeep = (name: string) => ({
    code: 'TOOL_FAILED',
    message: `Tool ${name} returned a value that nests arrays or objects more than 256 levels deep; it was not used.`,
  });
  /** A tool returning a value `depth` levels deep; counts its validations and renders. */
  const deepTool = (
    name: string,
    make: (depth: number) => unknown,
    seen: { validated: number; rendered: number },
  ) => {
    const definition = defineTool({
      name,
      description: 'Returns a value nested as deep as asked.',
      parameters: v.object({ depth: v.number() }),
      output: {
        schema: v.pipe(
          v.unknown(),
          v.check(() => ++seen.validated > 0),
        ),
        render: () => {
          seen.rendered++;
          return [{ type: 'text', text: 'rendered' }];
        },
      },
      execute: (args) => make(args.depth),
    });
    return definition;
  };
  const setupDeep = () => {
    const log = createMemoryEventLog();
    const registry = createRegistry({ log });
    const seen = { validated: 0, rendered: 0 };
    registry.global.register(deepTool('deep', nest, seen));
    // A body that answers with its own content (withContent) is held to the bound too.
    registry.global.register(
      deepTool('deep_own', (depth) => withContent(nest(depth), [{ type: 'text', text: 'own' }]), seen),
    );
    registry.global.register(echoTool('echo'));
    return { registry, scope: registry.global.child('agent'), seen, log };
  };

  it('a value nested more than 256 levels fails the call with TOOL_FAILED before validation and render', async () => {
    const { scope, seen, log } = setupDeep();
    for (const depth of [257, 100_000]) {
      const r = await run(scope, 'deep', { depth });
      expect(r?.ok).toBe(false);
      expect(r?.error).toEqual(tooDeep('deep'));
      expect(r?.content).toEqual([{ type: 'text', text: `Error: ${tooDeep('deep').message}` }]);
    }
    expect(seen).toEqual({ validated: 0, rendered: 0 });
    const ok = await run(scope, 'deep', { depth: 256 });
    expect(ok?.ok).toBe(true);
    expect(ok?.value).toEqual(nest(256));
    expect(seen).toEqual({ validated: 1, rendered: 1 });
    // The log holds the failures' errors, never the deep values.
    const results = (await log.list(agent.sessionId)).filter((e) => e.type === 'tool.result');
    expect(results.map((e) => (e.data as { ok: boolean }).ok)).toEqual([false, false, true]);
  });

  it('holds a body’s own-content answer (withContent) to the bound', async () => {
    const { scope, seen } = setupDeep();
    expect((await run(scope, 'deep_own', { depth: 300 }))?.error).toEqual(tooDeep('deep_own'));
    expect(seen.validated).toBe(0);
    expect((await run(scope, 'deep_own', { depth: 3 }))?.content).toEqual([{ type: 'text', text: 'own' }]);
  });

  it('holds a value a tools/execute wrapper answers with, and one a post-execute policy puts in place', async () => {
    const { scope } = setupDeep();
    const wrapped = scope.on('tools/execute', async () => ({
      ok: true,
      value: nest(1000) as never,
      content: [{ type: 'text', text: 'cached' }],
    }));
    expect((await run(scope))?.error).toEqual(tooDeep('echo'));
    wrapped();
    let postSaw = 0;
    const replaced = scope.on('tools/post-execute', () => {
      postSaw++;
      return { kind: 'replace', value: nest(257) as never };
    });
    expect((await run(scope))?.error).toEqual(tooDeep('echo'));
    replaced();
    // A policy that keeps the value (a redaction) passes: the body's check holds for it.
    scope.on('tools/post-execute', () => ({ kind: 'replace', content: [{ type: 'text', text: 'r' }] }));
    expect((await run(scope))?.ok).toBe(true);
    expect(postSaw).toBe(1);
  });
});
