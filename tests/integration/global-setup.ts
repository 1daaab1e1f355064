// Integration tests need the real Docker engine and the sandbox image. `npm test` prepares both
// before vitest starts; this makes a direct `npx vitest --project integration` work too (fast
// when everything is there) and hands the image tag to the tests (env DSH_SANDBOX_IMAGE and
// inject('sandboxImage')). It also makes sure of a Chromium for the console's browser tests
// (installed from Debian when missing, as the engine is); a machine that cannot get one fails only
// those tests, with the reason (inject('chromium')); likewise a Python with httpx and websockets for
// the Python client's tests (inject('python')).

import type { TestProject } from 'vitest/node';
import { loadConfig } from '../../host/config.ts';
import { ensureChromium } from '../../scripts/setup/chromium.ts';
import { ensureDockerEngine } from '../../scripts/setup/docker-engine.ts';
import { ensureSandboxImage } from '../../scripts/setup/image.ts';
import { ensurePython } from '../../scripts/setup/python.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    sandboxImage: string;
    /** The Chromium executable, or `error: <why there is none>`. */
    chromium: string;
    /** A Python for the Python client's tests (scripts/setup/python.ts), or `error: <why there is none>`. */
    python: string;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  process.env.TESTCONTAINERS_RYUK_DISABLED = 'true';
  process.env.TESTCONTAINERS_HOST_OVERRIDE ??= 'localhost';
  await ensureDockerEngine(loadConfig().dataDir);
  const image = process.env.DSH_SANDBOX_IMAGE || (await ensureSandboxImage()).tag;
  process.env.DSH_SANDBOX_IMAGE = image;
  project.provide('sandboxImage', image);
  project.provide('chromium', await ensureChromium().catch((e: Error) => `error: ${e.message}`));
  project.provide('python', await ensurePython().catch((e: Error) => `error: ${e.message}`));
}
