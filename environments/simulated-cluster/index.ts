/**
 * The simulated Kubernetes cluster (docs/architecture.md, "The simulated cluster"): an HTTP
 * apiserver for pods and
 * events plus a simulated node, used as the embedded default cluster and by tests.
 */
export { SimulatedCluster, type SimulatedClusterOptions } from './cluster.js';
export type { RecordedRequest, RequestMark, RequestQuery, RequestVerb } from './request-log.js';
export type { FaultScript, ScriptedRefusal } from './faults.js';
export {
  COMBINED_PREFIX,
  DISK_ANNOTATION,
  OCCURRENCES_BEFORE_AGGREGATION,
  SANDBOX_FAILURE_REASON,
  TEMPLATE_ANNOTATION,
  sandboxFailureMessage,
  type SimulatedNode,
} from './node.js';
export type { WatchedResource } from './store.js';
export type { Status } from './status.js';
