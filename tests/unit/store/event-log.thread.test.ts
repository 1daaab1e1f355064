import { runEventLogContract } from './event-log.contract.ts';
import { runEventBudgetContract } from './event-log-budget.contract.ts';
import { runUnfinishedCallsContract } from './event-log-calls.contract.ts';
import { eventLogFactory } from './event-log-factory.ts';
import { libsqlThreadEventLogHarness } from './harness.ts';

runEventLogContract(eventLogFactory(libsqlThreadEventLogHarness));
runEventBudgetContract(eventLogFactory(libsqlThreadEventLogHarness));
runUnfinishedCallsContract(eventLogFactory(libsqlThreadEventLogHarness));
