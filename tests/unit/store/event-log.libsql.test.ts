import { runEventLogContract } from './event-log.contract.ts';
import { libsqlEventLogHarness } from './harness.ts';

runEventLogContract(libsqlEventLogHarness);
