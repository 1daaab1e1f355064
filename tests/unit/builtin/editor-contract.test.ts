import { createMemoryProvider } from '../../../host/sandbox/memory/index.ts';
import { runFileToolsContract } from '../../contract/tools/file-tools.ts';

runFileToolsContract('memory', async () => ({ provider: createMemoryProvider() }));
