/** The API's JSON shapes as the CLI reads them (api/openapi.json is the reference). */

/** A sandbox. */
export interface Sandbox {
  id: string;
  template: string;
  resources: { cpu: number; memory_mib: number; disk_mib: number };
  state: string;
  pod: { name: string | null; uid: string | null; ip: string | null };
  failure: { code: string; message: string } | null;
  created_at: string;
}

/** An operation. */
export interface Operation {
  id: string;
  type: string;
  sandbox_id: string;
  status: 'running' | 'succeeded' | 'failed' | 'cancelled';
  done: boolean;
  phase: string;
  error: { code: string; message: string; details: Record<string, unknown> } | null;
  result: { sandbox: Sandbox } | null;
  created_at: string;
  updated_at: string;
  deadline_at: string | null;
}
