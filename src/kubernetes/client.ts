/**
 * Kubernetes client setup: `@kubernetes/client-node` from a kubeconfig file (KUBECONFIG) or the
 * pod's in-cluster service account. Nothing here knows about HTTP routes or Temporal.
 */
import { CoreV1Api, KubeConfig, type RequestContext } from '@kubernetes/client-node';
import { getGlobalDispatcher, type Dispatcher } from 'undici';
import { keepAliveAfterDeleteBody } from './body-keep-alive.js';

/**
 * A KubeConfig whose requests share one HTTP connection pool, which keeps its connections after
 * a pod delete too.
 *
 * Why one pool: client-node 2.0.1's `applySecurityAuthentication` (called before every API
 * request and every watch) builds a new undici `Agent` each time the cluster has TLS settings (a
 * CA, a client certificate, or `insecure-skip-tls-verify`), so every request opened its own
 * connection pool and TCP (and TLS) connection. This keeps the first dispatcher built for a
 * cluster and user and hands it to every later request (the key is the one client-node uses
 * for its own legacy agent cache); the per-request one, which never connected, is closed.
 * Without TLS settings client-node leaves the dispatcher unset; this then hands out undici's
 * global pool, composed as below.
 *
 * Why composed: undici closes the connection after a DELETE with a body, which every pod delete
 * is (its uid precondition); {@link keepAliveAfterDeleteBody} says why that is safe to keep.
 */
export class PooledKubeConfig extends KubeConfig {
  private readonly dispatchers = new Map<string, Dispatcher>();
  /** The pools built for this config (closed by {@link closeConnections}); not the global one. */
  private readonly owned = new Set<Dispatcher>();

  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const built = context.getDispatcher();
    const key = JSON.stringify([
      this.getCurrentCluster()?.name ?? '',
      this.getCurrentCluster()?.server ?? '',
      this.getCurrentUser()?.name ?? '',
    ]);
    let shared = this.dispatchers.get(key);
    if (!shared) {
      if (built) this.owned.add(built);
      shared = (built ?? getGlobalDispatcher()).compose(keepAliveAfterDeleteBody);
      this.dispatchers.set(key, shared);
    } else if (built) {
      void built.close().catch(() => undefined);
    }
    // client-node types the dispatcher with its own undici's types; the pool is the same undici.
    context.setDispatcher(shared as unknown as Parameters<RequestContext['setDispatcher']>[0]);
  }

  /** Closes the pools this config built (idle connections would otherwise linger ~4 s). */
  async closeConnections(): Promise<void> {
    const pools = [...this.owned];
    this.owned.clear();
    this.dispatchers.clear();
    await Promise.all(pools.map((pool) => pool.close().catch(() => undefined)));
  }
}

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
  const kubeConfig = new PooledKubeConfig();
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
