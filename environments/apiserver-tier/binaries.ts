/**
 * Finds the etcd and kube-apiserver binaries of the real apiserver tier, building them once from
 * the Go module proxy when nothing else is available. The wrapper modules with their pinned
 * go.mod/go.sum live in apiserver-tier/go/<name>; the builds land beside the Temporal CLI in
 * `~/.cache/durable-sandbox/`, outside the checkout, so fresh clones (CI) reuse them.
 *
 * Run directly (`npm run apiserver-tier`) it prints both paths on stdout, building what is
 * missing (progress and the time it took on stderr).
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { locateBinary, type TierBinary } from '../binaries/go-build.js';

export { findBinary, locateBinary, type TierBinary } from '../binaries/go-build.js';

/** etcd v3.6.16: the `go.etcd.io/etcd/server/v3` main package. */
export const ETCD: TierBinary = {
  name: 'etcd',
  envVar: 'ETCD_BINARY',
  version: 'v3.6.16',
  moduleDir: fileURLToPath(new URL('./go/etcd/', import.meta.url)),
  mainPackage: 'go.etcd.io/etcd/server/v3',
};

/** kube-apiserver v1.34.12, its staging modules pinned to v0.34.12 by `replace` lines. */
export const KUBE_APISERVER: TierBinary = {
  name: 'kube-apiserver',
  envVar: 'KUBE_APISERVER_BINARY',
  version: 'v1.34.12',
  moduleDir: fileURLToPath(new URL('./go/kube-apiserver/', import.meta.url)),
  mainPackage: 'k8s.io/kubernetes/cmd/kube-apiserver',
};

/** Both binaries of the tier, built one after the other (never at once: each needs the cores). */
export async function locateTierBinaries(): Promise<{ etcd: string; kubeApiserver: string }> {
  const etcd = await locateBinary(ETCD);
  const kubeApiserver = await locateBinary(KUBE_APISERVER);
  return { etcd, kubeApiserver };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  locateTierBinaries().then(
    ({ etcd, kubeApiserver }) => process.stdout.write(`${etcd}\n${kubeApiserver}\n`),
    (err: unknown) => {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
