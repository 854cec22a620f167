/**
 * Prepares a namespace of the real apiserver tier for the service, as a cluster operator would
 * (docs/production.md, deploy/rbac.yaml):
 *
 * - the Namespace, labelled for PodSecurity `enforce: baseline` (deploy/namespaces.yaml enforces
 *   `restricted`, which the default sandbox pod meets; `baseline` admits a template's
 *   `run_as_root` pods too and still refuses privileged pods), or the level asked for;
 * - its `default` ServiceAccount: there is no controller-manager to create it, and the
 *   ServiceAccount admission plugin (kept on, as in every real cluster) refuses pods until it
 *   exists;
 * - every object of deploy/rbac.yaml (the worker's Role and its RoleBinding), moved to this
 *   namespace (with `watch` dropped from the events rule when `eventsWatch` is false);
 * - a RoleBinding of that Role to the `durable-sandbox` user of the tier's token file, so the
 *   worker runs with exactly the rights deploy/rbac.yaml grants. The `durable-sandbox-api` user
 *   (the API) gets nothing here, as deploy/ grants its account nothing.
 *
 * A namespace is never deleted: with no namespace controller its deletion never completes, so
 * tests use a fresh one each.
 */
import { readFileSync } from 'node:fs';
import {
  CoreV1Api,
  KubernetesObjectApi,
  loadAllYaml,
  type KubeConfig,
  type KubernetesObject,
  type V1PolicyRule,
} from '@kubernetes/client-node';

/** Options of prepareNamespace. */
export interface NamespaceOptions {
  /** Grant `watch` on events (default true). False proves the degrade path on a real 403. */
  eventsWatch?: boolean;
  /** PodSecurity level enforced in the namespace (default `baseline`). */
  podSecurity?: 'privileged' | 'baseline' | 'restricted';
}

/** Name of the RoleBinding that binds deploy/rbac.yaml's Role to the `durable-sandbox` user. */
export const USER_ROLE_BINDING = 'durable-sandbox-user';

/** The objects of deploy/rbac.yaml, moved to `namespace`. */
export function rbacObjects(namespace: string, eventsWatch = true): KubernetesObject[] {
  const path = new URL('../../deploy/rbac.yaml', import.meta.url);
  const objects = loadAllYaml(readFileSync(path, 'utf8')) as Array<Record<string, unknown>>;
  return objects.map((object) => {
    const moved = structuredClone(object) as Record<string, unknown> & KubernetesObject;
    moved.metadata = { ...moved.metadata, namespace };
    if (Array.isArray(moved.subjects)) {
      moved.subjects = (moved.subjects as Array<Record<string, unknown>>).map((subject) =>
        subject.kind === 'ServiceAccount' ? { ...subject, namespace } : subject,
      );
    }
    if (!eventsWatch && Array.isArray(moved.rules)) {
      moved.rules = (moved.rules as V1PolicyRule[]).map((rule) =>
        rule.resources?.includes('events')
          ? { ...rule, verbs: rule.verbs.filter((verb) => verb !== 'watch') }
          : rule,
      );
    }
    return moved;
  });
}

/**
 * Creates the namespace and its objects (see the file comment).
 * @param admin a KubeConfig allowed to create namespaces and RBAC objects
 * @throws the client's ApiException when a create is refused (409 included: use a fresh name)
 */
export async function prepareNamespace(
  admin: KubeConfig,
  name: string,
  options: NamespaceOptions = {},
): Promise<void> {
  const level = options.podSecurity ?? 'baseline';
  const core = admin.makeApiClient(CoreV1Api);
  await core.createNamespace({
    body: {
      metadata: {
        name,
        labels: {
          'pod-security.kubernetes.io/enforce': level,
          'pod-security.kubernetes.io/enforce-version': 'latest',
        },
      },
    },
  });
  await core.createNamespacedServiceAccount({
    namespace: name,
    body: { metadata: { name: 'default' } },
  });
  const objects = admin.makeApiClient(KubernetesObjectApi);
  const rbac = rbacObjects(name, options.eventsWatch ?? true);
  for (const object of rbac) await objects.create(object);
  const role = rbac.find((object) => object.kind === 'Role');
  await objects.create({
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'RoleBinding',
    metadata: { name: USER_ROLE_BINDING, namespace: name },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'durable-sandbox' }],
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role?.metadata?.name },
  } as KubernetesObject);
}
