import { runSandboxContract } from '../../contract/sandbox/suite.ts';
import { dockerFixture } from './fixtures.ts';

const fx = dockerFixture();
runSandboxContract('docker', async () => ({
  provider: fx.provider({ pool: { size: 1 } }),
  cleanup: fx.sweep,
}));
