import { runEventLogContract } from './event-log.contract.ts';
import { runEventBudgetContract } from './event-log-budget.contract.ts';
import { libsqlEventLogHarness } from './harness.ts';

runEventLogContract(libsqlEventLogHarness);
runEventBudgetContract(libsqlEventLogHarness);
