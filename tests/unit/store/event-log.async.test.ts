import { runEventLogContract } from './event-log.contract.ts';
import { runEventBudgetContract } from './event-log-budget.contract.ts';
import { runUnfinishedCallsContract } from './event-log-calls.contract.ts';
import { asyncEventLogFactory } from './event-log-factory.ts';

runEventLogContract(asyncEventLogFactory);
runEventBudgetContract(asyncEventLogFactory);
runUnfinishedCallsContract(asyncEventLogFactory);
