// The sandbox runtimes the integration suites run under, parametrised (not copied): runc on the
// machine's main engine, gvisor on a private engine with runsc that the suite starts and removes
// (tests/helpers/gvisor-engine.ts). A runtime that cannot run here is skipped with the reason in
// the suite's name.
import Docker from 'dockerode';
import { afterAll, beforeAll, describe } from 'vitest';
import type { SandboxRuntime } from '../../host/sandbox/runtimes.ts';
import { gvisorEngineUnavailable, type PrivateEngine, startGvisorEngine } from '../helpers/gvisor-engine.ts';
import { sandboxImage } from './sandbox/fixtures.ts';

/** The engine a suite's sandboxes run on. */
export interface Engine {
  docker: Docker;
  runtime: SandboxRuntime;
  /** Agent creation's `sandbox` for this runtime (runc: nothing, the default). */
  sandbox: { runtime?: SandboxRuntime };
}

const CASES: Array<{ runtime: SandboxRuntime; missing: string | undefined }> = [
  { runtime: 'runc', missing: undefined },
  { runtime: 'gvisor', missing: gvisorEngineUnavailable() },
];

/**
 * One describe per runtime: `fn` declares the suite with `engine()`, valid from its beforeAll on
 * (the private engine starts in a beforeAll declared before fn's and stops after its afterAll).
 */
export const describeRuntimes = (name: string, fn: (engine: () => Engine) => void): void => {
  for (const { runtime, missing } of CASES) {
    if (missing !== undefined) {
      describe.skip(`${name} [${runtime}; skipped: ${missing}]`, () => fn(() => ({}) as Engine));
      continue;
    }
    describe(`${name} [${runtime}]`, () => {
      let current: Engine | undefined;
      let running: PrivateEngine | undefined;
      beforeAll(async () => {
        if (runtime === 'runc') current = { docker: new Docker(), runtime, sandbox: {} };
        else {
          running = await startGvisorEngine(sandboxImage());
          current = { docker: running.docker, runtime, sandbox: { runtime } };
        }
      }, 300_000);
      afterAll(async () => {
        await running?.stop();
      }, 120_000);
      fn(() => {
        if (current === undefined)
          throw new Error('the engine is not started yet (use it from beforeAll on)');
        return current;
      });
    });
  }
};
