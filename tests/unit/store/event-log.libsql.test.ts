import { runEventLogContract } from './event-log.contract.ts';
import { runEventBudgetContract } from './event-log-budget.contract.ts';
import { runUnfinishedCallsContract } from './event-log-calls.contract.ts';
import { eventLogFactory } from './event-log-factory.ts';
import { libsqlEventLogHarness } from './harness.ts';

runEventLogContract(eventLogFactory(libsqlEventLogHarness));
runEventBudgetContract(eventLogFactory(libsqlEventLogHarness));
runUnfinishedCallsContract(eventLogFactory(libsqlEventLogHarness));
