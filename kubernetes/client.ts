/**
 * Kubernetes client setup: `@kubernetes/client-node` from a kubeconfig file (KUBECONFIG) or the
 * pod's in-cluster service account. Nothing here knows about HTTP routes or Temporal.
 */
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';

/** What the create path needs to reach the cluster. */
export interface KubernetesClient {
  kubeConfig: KubeConfig;
  core: CoreV1Api;
  /** Namespace of sandbox pods (SANDBOX_NAMESPACE). */
  namespace: string;
}

/** Where the client's configuration comes from. */
export interface KubernetesClientOptions {
  /** Path of a kubeconfig file; unset means in-cluster configuration. */
  kubeconfigPath?: string;
  /** Kubeconfig YAML text; wins over `kubeconfigPath` (used by tests). */
  kubeconfigYaml?: string;
  namespace: string;
}

/**
 * Builds the client.
 * @throws Error when no kubeconfig is given and the process is not running in a cluster
 *   (KUBERNETES_SERVICE_HOST unset), or when the kubeconfig has no current cluster.
 */
export function createKubernetesClient(options: KubernetesClientOptions): KubernetesClient {
  const kubeConfig = new KubeConfig();
  if (options.kubeconfigYaml) {
    kubeConfig.loadFromString(options.kubeconfigYaml);
  } else if (options.kubeconfigPath) {
    kubeConfig.loadFromFile(options.kubeconfigPath);
  } else if (process.env.KUBERNETES_SERVICE_HOST) {
    kubeConfig.loadFromCluster();
  } else {
    throw new Error('KUBECONFIG is unset and the process is not running inside a cluster');
  }
  if (!kubeConfig.getCurrentCluster()) {
    throw new Error('the kubeconfig has no current cluster (check its current-context)');
  }
  return { kubeConfig, core: kubeConfig.makeApiClient(CoreV1Api), namespace: options.namespace };
}

/** The HTTP status of an error thrown by the client (`ApiException.code`), if it has one. */
export function statusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const candidate =
    (err as { code?: unknown; statusCode?: unknown }).code ??
    (err as { statusCode?: unknown }).statusCode;
  return typeof candidate === 'number' ? candidate : undefined;
}
