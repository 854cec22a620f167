/**
 * The Kubernetes event a kubelet records when the container runtime cannot create a pod's
 * sandbox: `type: Warning`, `reason: FailedCreatePodSandBox` (kubelet, pkg/kubelet/events
 * `FailedCreatePodSandBox`). The informers and the warm pools select these events by field
 * selector; what such an event means for a create is the verdict's (src/verdict/refusal.ts).
 */
export const FAILED_SANDBOX_EVENT = {
  /** Event reason kubelet records when the runtime cannot create the pod sandbox. */
  reason: 'FailedCreatePodSandBox',
  /** Event type that counts. */
  type: 'Warning',
} as const;
