/** The API's Sandbox JSON (design.md section 3), built from a stored sandbox. */
import type { Resources, SandboxRecord, SandboxState } from '../store/index.js';

/** A sandbox as the API shows it. Timestamps are ISO-8601 UTC. */
export interface SandboxView {
  id: string;
  template: string;
  resources: Resources;
  state: SandboxState;
  pod: { name: string | null; uid: string | null; ip: string | null };
  failure: { code: string; message: string } | null;
  /** The operation that created the sandbox. */
  operation_id: string;
  created_at: string;
  updated_at: string;
}

/** Maps a stored sandbox to its API JSON (no tenant, no fencing fields). */
export function sandboxView(record: SandboxRecord): SandboxView {
  return {
    id: record.id,
    template: record.template,
    resources: { ...record.resources },
    state: record.state,
    pod: { ...record.pod },
    failure: record.failure ? { ...record.failure } : null,
    operation_id: record.operationId,
    created_at: record.createdAt,
    updated_at: record.updatedAt,
  };
}
