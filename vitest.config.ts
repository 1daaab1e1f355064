// Two projects: `unit` (no Docker, seconds) and `integration` (the real Docker engine and the
// real isolate host). Every test process loads isolated-vm, so it runs with --no-node-snapshot
// in forked children (NODE_OPTIONS cannot carry that flag into worker threads). The root
// globalSetup runs once per run for both projects: one private PostgreSQL cluster
// (tests/helpers/postgres-global-setup.ts), provided to every project.
import { defineConfig } from 'vitest/config';

const shared = {
  pool: 'forks' as const,
  execArgv: ['--no-node-snapshot'],
};

export default defineConfig({
  test: {
    globalSetup: ['tests/helpers/postgres-global-setup.ts'],
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
