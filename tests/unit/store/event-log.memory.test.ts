import { runEventLogContract } from './event-log.contract.ts';
import { memoryEventLogHarness } from './harness.ts';

runEventLogContract(memoryEventLogHarness);
