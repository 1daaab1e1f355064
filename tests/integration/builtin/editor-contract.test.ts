// The file tools' contract (tests/contract/tools/file-tools.ts) on a real container of the sandbox
// image: sandboxd, ripgrep, real symlinks.
import { runFileToolsContract } from '../../contract/tools/file-tools.ts';
import { dockerFixture } from '../sandbox/fixtures.ts';

const fx = dockerFixture();
runFileToolsContract('docker', async () => ({
  provider: fx.provider({ pool: { size: 1 } }),
  cleanup: fx.sweep,
}));
