import { runEventLogContract } from './event-log.contract.ts';
import { runEventBudgetContract } from './event-log-budget.contract.ts';
import { libsqlThreadEventLogHarness } from './harness.ts';

runEventLogContract(libsqlThreadEventLogHarness);
runEventBudgetContract(libsqlThreadEventLogHarness);
