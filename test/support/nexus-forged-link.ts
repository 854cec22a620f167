/**
 * A workflow interceptor module for test/nexus.test.ts: a caller's workflow whose memo names
 * `forgedNamespace` adds its own `nexus-link` header to every Nexus operation it starts, a link
 * to a workflow event in that namespace, as a caller pretending to be another namespace would.
 */
import { workflowInfo, type WorkflowInterceptors } from '@temporalio/workflow';

/** The header value of a Temporal workflow-event link in `namespace`. */
export function forgedLink(namespace: string): string {
  return (
    `<temporal:///namespaces/${namespace}/workflows/forged/forged/history?eventID=5` +
    `&eventType=NexusOperationScheduled&referenceType=EventReference>; ` +
    `type="temporal.api.common.v1.Link.WorkflowEvent"`
  );
}

export const interceptors = (): WorkflowInterceptors => ({
  outbound: [
    {
      async startNexusOperation(input, next) {
        const forged = workflowInfo().memo?.forgedNamespace;
        if (typeof forged !== 'string') return next(input);
        return next({ ...input, headers: { ...input.headers, 'nexus-link': forgedLink(forged) } });
      },
    },
  ],
});
