/**
 * SimulatedCluster: a real HTTP server on 127.0.0.1 speaking the Kubernetes API subset the
 * service uses, a scheduler and one or more simulated nodes (docs/architecture.md, "The simulated cluster"). The
 * embedded default cluster
 * for `npm start` and the apiserver of the readiness tests, which reach it only over HTTP
 * through @kubernetes/client-node.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequestHandler } from './apiserver.js';
import { Faults, type FaultScript } from './faults.js';
import { renderKubeconfig, writeKubeconfigFile } from './kubeconfig.js';
import { SimulatedKubelet, type SimulatedNode } from './node.js';
import {
  requestsWhere,
  type RecordedRequest,
  type RequestMark,
  type RequestQuery,
} from './request-log.js';
import { SimulatedScheduler } from './scheduler.js';
import { DEFAULT_HISTORY_LIMIT, ObjectStore, type WatchedResource } from './store.js';
import { WatchRegistry } from './watch.js';

/** How to start a simulated cluster; every field is optional. */
export interface SimulatedClusterOptions {
  /** Listen address. Default '127.0.0.1'. */
  host?: string;
  /** Listen port; 0 picks a free one. Default 0. */
  port?: number;
  /** The node's name (`spec.nodeName`, event `source.host`). Default 'sim-node-1'. */
  nodeName?: string;
  /**
   * The cluster's nodes, in the order the scheduler tries them (it binds a pod to the first
   * its required node affinity allows; simulated-cluster/scheduling.ts). Default `[nodeName]`.
   */
  nodeNames?: string[];
  /**
   * Template name -> rootfs size in MiB on the node. Default `{ base: 451 }`. A pod naming a
   * template not listed is refused with InvalidArgument "template <x> is not present on node <node>".
   */
  rootfsMib?: Record<string, number>;
  /** Delay (ms) before the node acts on a new pod (IP or first refusal). Default 300. */
  startupDelayMs?: number;
  /** First back-off (ms) between repeated refusal events of a pod, doubling each time. Default 1000. */
  refusalBackoffMs?: number;
  /** Cap (ms) of that back-off. Default 10000. */
  refusalBackoffMaxMs?: number;
  /**
   * Changes kept per resource for watches that resume from a resourceVersion; a watch from an
   * older one gets an in-stream 410 Expired. Default 1000.
   */
  historyLimit?: number;
}

/** A running simulated apiserver + node. Start with `SimulatedCluster.start()`, stop with `close()`. */
export class SimulatedCluster {
  /** Base URL, e.g. `http://127.0.0.1:34567`. */
  readonly url: string;
  /**
   * Every request served, in arrival order (watches and faulted requests included). Tests read
   * it through {@link requestsWhere} and {@link requestMark}.
   */
  readonly requests: RecordedRequest[];
  /** Scripted faults. */
  readonly faults: FaultScript;
  /** Direct access to the (first) node. */
  readonly node: SimulatedNode;
  /** Every node by name, in the scheduler's order. */
  readonly nodes: ReadonlyMap<string, SimulatedNode>;

  private constructor(
    private readonly server: Server,
    private readonly watches: WatchRegistry,
    private readonly kubelets: Map<string, SimulatedKubelet>,
    private readonly scheduler: SimulatedScheduler,
    private readonly timers: Set<() => void>,
    private readonly markClosed: () => void,
    faults: Faults,
    requests: RecordedRequest[],
    private readonly connectionCount: () => number,
  ) {
    const { address, port } = server.address() as AddressInfo;
    const host = address.includes(':') ? `[${address}]` : address;
    this.url = `http://${host}:${port}`;
    this.requests = requests;
    this.faults = faults;
    this.nodes = kubelets;
    this.node = [...kubelets.values()][0] as SimulatedKubelet;
  }

  /**
   * Starts the server and the node.
   * @throws the listen error (e.g. EADDRINUSE) when the port cannot be bound
   */
  static async start(options: SimulatedClusterOptions = {}): Promise<SimulatedCluster> {
    const store = new ObjectStore(options.historyLimit ?? DEFAULT_HISTORY_LIMIT);
    const watches = new WatchRegistry(store);
    const faults = new Faults(watches);
    const nodeNames = options.nodeNames ?? [options.nodeName ?? 'sim-node-1'];
    if (nodeNames.length === 0 || new Set(nodeNames).size !== nodeNames.length) {
      throw new Error('nodeNames must name at least one node, each once');
    }
    const scheduler = new SimulatedScheduler(store, nodeNames);
    const kubelets = new Map(
      nodeNames.map((nodeName, nodeIndex) => [
        nodeName,
        new SimulatedKubelet(store, faults, {
          nodeName,
          nodeIndex,
          rootfsMib: options.rootfsMib ?? { base: 451 },
          startupDelayMs: options.startupDelayMs ?? 300,
          refusalBackoffMs: options.refusalBackoffMs ?? 1000,
          refusalBackoffMaxMs: options.refusalBackoffMaxMs ?? 10_000,
        }),
      ]),
    );
    const requests: RecordedRequest[] = [];
    const timers = new Set<() => void>();
    let closed = false;
    let serverAddress = '';
    const server = createServer(
      createRequestHandler({
        store,
        watches,
        faults,
        requests,
        serverAddress: () => serverAddress,
        closed: () => closed,
        sleep: (ms) =>
          new Promise<void>((resolve) => {
            const cancel = () => {
              clearTimeout(timer);
              timers.delete(cancel);
              resolve();
            };
            const timer = setTimeout(cancel, ms);
            timers.add(cancel);
          }),
      }),
    );
    let connections = 0;
    server.on('connection', () => (connections += 1));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
    const { address, port } = server.address() as AddressInfo;
    serverAddress = `${address.includes(':') ? `[${address}]` : address}:${port}`;
    return new SimulatedCluster(
      server,
      watches,
      kubelets,
      scheduler,
      timers,
      () => {
        closed = true;
      },
      faults,
      requests,
      () => connections,
    );
  }

  /** The kubeconfig (YAML): cluster 'simulated' at `url`, user with token 'simulated', context 'simulated' current. */
  kubeconfigYaml(namespace?: string): string {
    return renderKubeconfig(this.url, namespace);
  }

  /**
   * Writes `kubeconfigYaml(namespace)` to `path`, creating its directory.
   * @param namespace the context's namespace, so `kubectl get pods` needs no `-n`
   * @throws the fs error when the path cannot be written
   */
  writeKubeconfig(path: string, namespace?: string): void {
    writeKubeconfigFile(path, this.kubeconfigYaml(namespace));
  }

  /**
   * The requests served that match `query`, in arrival order; every field given must match
   * (simulated-cluster/request-log.ts). E.g. the deletes of one pod with their DeleteOptions:
   * `requestsWhere({ verb: 'delete', resource: 'pods', namespace, name })`; pod creates the
   * apiserver accepted: `{ verb: 'create', resource: 'pods', status: 201 }`; everything since a
   * mark: `{ after: mark }`.
   * @param query verb, resource, namespace, name, status, since (epoch ms), after (a mark)
   * @returns a new array of the log's own records (a status sent later shows on them)
   */
  requestsWhere(query: RequestQuery = {}): RecordedRequest[] {
    return requestsWhere(this.requests, query);
  }

  /** A mark in the request log now: `requestsWhere({ after: mark })` is what arrived since. */
  requestMark(): RequestMark {
    return { logged: this.requests.length };
  }

  /** TCP connections the server has accepted since it started (a client's pool reuses them). */
  get connectionsAccepted(): number {
    return this.connectionCount();
  }

  /** Number of watch streams open now, of one resource or all. */
  openWatches(resource?: WatchedResource): number {
    return this.watches.count(resource);
  }

  /** Ends every watch, stops the nodes' timers and pending delays, and closes the server. */
  async close(): Promise<void> {
    this.markClosed();
    this.scheduler.stop();
    for (const kubelet of this.kubelets.values()) kubelet.stop();
    for (const cancel of [...this.timers]) cancel();
    this.watches.close();
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
