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
  /** The operation's workflow in the Temporal UI, when the API knows the UI's address. */
  temporal_ui_url?: string | null;
}

/** A page of a list; `next_page_token` is null on the last page. */
export interface Page {
  next_page_token: string | null;
}
