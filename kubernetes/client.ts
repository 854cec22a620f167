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

/**
 * The HTTP status carried by an error of client-node, if it carries one. The one reader of a
 * status in the service (requests and watches alike). Precedence:
 * 1. a numeric `statusCode`: what `Watch` sets on the error it passes to `done` when the watch
 *    request is answered with a non-2xx status;
 * 2. a numeric `code`: `ApiException.code` of a request, and the `code` of the metav1.Status an
 *    in-stream `ERROR` event carries.
 * String codes (Node's `ECONNRESET` and the like) are no HTTP status: undefined.
 */
export function httpStatusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { statusCode, code } = err as { statusCode?: unknown; code?: unknown };
  if (typeof statusCode === 'number') return statusCode;
  if (typeof code === 'number') return code;
  return undefined;
}
