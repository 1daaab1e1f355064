import { runEventLogContract } from './event-log.contract.ts';
import { runEventBudgetContract } from './event-log-budget.contract.ts';
import { runUnfinishedCallsContract } from './event-log-calls.contract.ts';
import { eventLogFactory } from './event-log-factory.ts';
import { memoryEventLogHarness } from './harness.ts';

runEventLogContract(eventLogFactory(memoryEventLogHarness));
runEventBudgetContract(eventLogFactory(memoryEventLogHarness));
runUnfinishedCallsContract(eventLogFactory(memoryEventLogHarness));
