import { runEventLogContract } from './event-log.contract.ts';
import { runEventBudgetContract } from './event-log-budget.contract.ts';
import { memoryEventLogHarness } from './harness.ts';

runEventLogContract(memoryEventLogHarness);
runEventBudgetContract(memoryEventLogHarness);
