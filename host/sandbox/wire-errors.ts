// The one place the host reads sandbox-wire's errors (sandbox-wire/errors.ts). A code on sandboxd's
// short list becomes the SandboxError of the same code, so its HTTP status and message are what the
// API always showed; any other code in an answer comes from a broken or hostile sandboxd and becomes
// SANDBOX_PROTOCOL, as a frame that breaks the protocol does. That every wire code is a service code
// is checked by the compiler here: `new SandboxError(code, …)` takes only an ErrorCode.

import { isWireErrorCode, type WireError } from '../../sandbox-wire/errors.ts';
import { SandboxError } from '../errors.ts';

/** A WireError thrown on this side (by the shared path rules) as the service's own error. */
export const fromWireError = (error: WireError): SandboxError =>
  new SandboxError(error.code, error.message, error.data === undefined ? {} : { data: error.data });

/** The error of a failed call, as sandboxd answered it (`{ code, message }`, both untrusted). */
export const fromWireAnswer = (op: string, error: { code: string; message: string }): SandboxError => {
  const data = { op, sandboxdCode: error.code };
  if (isWireErrorCode(error.code)) return new SandboxError(error.code, error.message, { data });
  return new SandboxError(
    'SANDBOX_PROTOCOL',
    `sandboxd broke the protocol (it answered ${op} with the error code ${JSON.stringify(error.code)}, which it may not send): ${error.message}`,
    { data },
  );
};
