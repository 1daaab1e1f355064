// Certificate roles on the node protocol (docs/nodes.md, "Certificates"): the cluster's CA signs
// certificates for two roles, named by a URI in the subject alternative names: a control plane's
// (`urn:dsh:control-plane`) and a node agent's (`urn:dsh:node:<name>`, the node's name in
// DSH_NODES). The CA's signature says a certificate is the cluster's; the role says what it may do.
// Invariants: a node agent serves only a peer whose certificate names the control-plane role; a
// control plane speaks to a node only when the node's certificate names that very node (so one
// node's certificate cannot stand in for another's, even at the same host); a certificate with
// no role, or with more than one, is refused; a refusal is NODE_CERTIFICATE_REFUSED.
// Instances: a control plane's certificate also names the control-plane instances it may act for
// (`urn:dsh-instance:<id>`, the store's instance id; replicas of one deployment share it), and a
// node serves a request only for an instance its certificate names: one control plane's
// certificate (or a stolen one) cannot see, stop, adopt or claim another instance's sandboxes on a
// node they share. Instance names are not roles, and lie outside the roles' `urn:dsh:` names so
// that a node agent from before instances (which counts every `urn:dsh:` name as a role) still
// sees one role in a new control plane's certificate: nodes can be upgraded after control planes.

import type { PeerCertificate } from 'node:tls';
import { SandboxError } from '../../../errors.ts';

export const CONTROL_PLANE_ROLE = 'urn:dsh:control-plane';
const NODE_ROLE_PREFIX = 'urn:dsh:node:';
const ROLE_PREFIX = 'urn:dsh:';
const INSTANCE_PREFIX = 'urn:dsh-instance:';

/**
 * A control-plane instance id as a node takes it and as the docker provider puts it into names and
 * folders: the store's own pattern (store/instance-id.ts says why its bounds), so an id the store
 * keeps is one every node takes and no other is. Re-exported for host/sandbox from this module,
 * which sits below both the node protocol and the docker provider (it imports only the error
 * module and that one, which imports nothing else).
 */
export { INSTANCE_ID, INSTANCE_ID_TEXT } from '../../../store/instance-id.ts';

/** The role URI of node `name`'s certificate. */
export const nodeRole = (name: string): string => `${NODE_ROLE_PREFIX}${name}`;

/** The URI naming control-plane instance `id` in a control plane's certificate. */
export const instanceName = (id: string): string => `${INSTANCE_PREFIX}${id}`;

type Named = Pick<PeerCertificate, 'subjectaltname'> | undefined;

/** The URIs a certificate names that begin with `prefix` (its `URI:<prefix>…` alternative names). */
const urisOf = (cert: Named, prefix: string): string[] =>
  (cert?.subjectaltname ?? '')
    .split(', ')
    .flatMap((entry) => (entry.startsWith(`URI:${prefix}`) ? [entry.slice(4)] : []));

/** The dsh role URIs a certificate names (its `URI:urn:dsh:…` alternative names). */
export const rolesOf = (cert: Named): string[] => urisOf(cert, ROLE_PREFIX);

/** The control-plane instances a certificate names (`URI:urn:dsh-instance:<id>`), the ids only. */
export const instancesOf = (cert: Named): string[] =>
  urisOf(cert, INSTANCE_PREFIX).map((name) => name.slice(INSTANCE_PREFIX.length));

/** What names the certificate for a refusal's message: its subject's CN and its roles. */
export const describeCert = (
  cert: Partial<Pick<PeerCertificate, 'subject' | 'subjectaltname'>> | undefined,
): string => {
  const cn = cert?.subject?.CN;
  const roles = rolesOf(cert as PeerCertificate | undefined);
  return `CN=${typeof cn === 'string' ? cn : '?'}, role ${roles.length === 0 ? 'none' : roles.join(' and ')}`;
};

const refused = (message: string, data: Record<string, unknown>): SandboxError =>
  new SandboxError('NODE_CERTIFICATE_REFUSED', message, { data });

/** Undefined when `cert` is a control plane's, else the refusal (a node agent's check of its client). */
export function controlPlaneRefusal(cert: PeerCertificate | undefined): SandboxError | undefined {
  const roles = rolesOf(cert);
  if (roles.length === 1 && roles[0] === CONTROL_PLANE_ROLE) return undefined;
  return refused(
    `Only a control plane's certificate (${CONTROL_PLANE_ROLE}) may call a node; this one is ${describeCert(cert)}.`,
    { roles },
  );
}

/**
 * Undefined when `cert` (a control plane's) names `instance`, else the refusal: the node's check of
 * every request's `x-dsh-instance`, and the control plane's of its own certificate at its start.
 */
export function instanceRefusal(instance: string, cert: Named): SandboxError | undefined {
  const instances = instancesOf(cert);
  if (instances.includes(instance)) return undefined;
  return refused(
    `A control plane's certificate may act only for the instances it names (${instanceName('<id>')}); this one ${
      instances.length === 0 ? 'names none' : `names ${instances.join(', ')}`
    }, not instance ${instance}. Make it again naming the instance: node scripts/node-certs.ts control <dir> <name> ${instance} (docs/nodes.md).`,
    { instance, instances },
  );
}

/** Undefined when `cert` is node `name`'s, else the refusal (the control plane's check of the node it dialled). */
export function nodeRefusal(name: string, cert: PeerCertificate | undefined): SandboxError | undefined {
  const roles = rolesOf(cert);
  if (roles.length === 1 && roles[0] === nodeRole(name)) return undefined;
  return refused(
    `Node ${name} presented a certificate that is not node ${name}'s (${nodeRole(name)}): ${describeCert(cert)}.`,
    { node: name, roles },
  );
}
