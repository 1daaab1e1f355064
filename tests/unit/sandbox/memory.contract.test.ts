import { createMemoryProvider } from '../../../host/sandbox/memory/index.ts';
import { runSandboxContract } from '../../contract/sandbox/suite.ts';

runSandboxContract('memory', async () => ({ provider: createMemoryProvider() }));
