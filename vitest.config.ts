// Two projects: `unit` (no Docker, seconds) and `integration` (the real Docker engine and the
// real isolate host). Every test process loads isolated-vm, so it runs with --no-node-snapshot
// in forked children (NODE_OPTIONS cannot carry that flag into worker threads).
import { defineConfig } from 'vitest/config';

const shared = {
  pool: 'forks' as const,
  execArgv: ['--no-node-snapshot'],
};

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          ...shared,
          name: 'unit',
          include: ['tests/unit/**/*.test.ts', 'sdk-gen/**/*.test.ts'],
          testTimeout: 20_000,
        },
      },
      {
        test: {
          ...shared,
          name: 'integration',
          include: ['tests/integration/**/*.test.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          globalSetup: ['tests/integration/global-setup.ts'],
          fileParallelism: false,
        },
      },
    ],
  },
});
