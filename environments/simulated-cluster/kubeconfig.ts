/**
 * The kubeconfig for a simulated cluster, so @kubernetes/client-node and kubectl can reach it:
 * cluster `simulated`, user `simulated` with bearer token `simulated`, context `simulated`
 * (current). The cluster entry sets `insecure-skip-tls-verify: true` because
 * @kubernetes/client-node refuses an `http://` server without it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/** Name of the cluster, user and context in the kubeconfig. */
export const KUBECONFIG_NAME = 'simulated';

/**
 * Renders the kubeconfig as YAML.
 * @param server the apiserver URL, e.g. `http://127.0.0.1:34567`
 * @param namespace the context's namespace (kubectl's default for commands without `-n`);
 *   unset: none, kubectl then uses `default`
 */
export function renderKubeconfig(server: string, namespace?: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `  - name: ${KUBECONFIG_NAME}`,
    '    cluster:',
    `      server: ${JSON.stringify(server)}`,
    // client-node refuses plain HTTP unless this is set; kubectl ignores it for http:// servers.
    '      insecure-skip-tls-verify: true',
    'users:',
    `  - name: ${KUBECONFIG_NAME}`,
    '    user:',
    `      token: ${KUBECONFIG_NAME}`,
    'contexts:',
    `  - name: ${KUBECONFIG_NAME}`,
    '    context:',
    `      cluster: ${KUBECONFIG_NAME}`,
    `      user: ${KUBECONFIG_NAME}`,
    ...(namespace ? [`      namespace: ${JSON.stringify(namespace)}`] : []),
    `current-context: ${KUBECONFIG_NAME}`,
    'preferences: {}',
    '',
  ].join('\n');
}

/**
 * Writes `yaml` to `path`, creating its directory; mode 0600 like kubectl's own files.
 * @throws the fs error when the path cannot be written
 */
export function writeKubeconfigFile(path: string, yaml: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, yaml, { mode: 0o600 });
}
