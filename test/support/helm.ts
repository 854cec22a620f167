/**
 * Runs the pinned helm binary (environments/helm/binaries.ts) against one kubeconfig, with its
 * cache, config and data directories in a temporary directory of its own: the user's
 * repositories and plugins are neither read nor changed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { locateHelm } from '../../environments/helm/binaries.js';

/** One helm run's exit code and output. */
export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** A helm bound to one cluster. */
export interface Helm {
  /** Runs `helm <args>`; never throws for a non-zero exit (see `code`). */
  run(args: string[]): Promise<HelmResult>;
  /** Writes a values file (YAML or JSON text) into the temporary directory; returns its path. */
  valuesFile(name: string, text: string): string;
  /** Removes the temporary directory. */
  dispose(): void;
}

/**
 * A helm for the cluster of `kubeconfigYaml` (none: `helm lint` and `helm template` only).
 * @throws Error when helm can be neither found nor built (environments/helm/binaries.ts)
 */
export async function helmFor(kubeconfigYaml?: string): Promise<Helm> {
  const binary = await locateHelm();
  const dir = mkdtempSync(join(tmpdir(), 'durable-sandbox-helm-'));
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigYaml ?? '', { mode: 0o600 });
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: dir,
    KUBECONFIG: kubeconfig,
    HELM_CACHE_HOME: join(dir, 'cache'),
    HELM_CONFIG_HOME: join(dir, 'config'),
    HELM_DATA_HOME: join(dir, 'data'),
  };
  return {
    async run(args) {
      try {
        const { stdout, stderr } = await promisify(execFile)(binary, args, {
          env,
          maxBuffer: 16 * 1024 * 1024,
        });
        return { code: 0, stdout, stderr };
      } catch (err) {
        const failed = err as { code?: number; stdout?: string; stderr?: string };
        if (typeof failed.code !== 'number') throw err;
        return { code: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
      }
    },
    valuesFile(name, text) {
      const path = join(dir, name);
      writeFileSync(path, text);
      return path;
    },
    dispose() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
