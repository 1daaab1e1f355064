import { runAgentStoreContract } from './agent-store.contract.ts';
import { libsqlAgentStoreHarness } from './agent-store.harness.ts';

runAgentStoreContract(libsqlAgentStoreHarness);
