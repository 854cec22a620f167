/**
 * Finds the Helm v4 binary the chart's tests run (test/helm-chart.test.ts) and that renders
 * deploy/ from deploy/chart (`npm run deploy:render`), building it once from the Go module proxy
 * when nothing else is available: the wrapper module environments/helm/go pins
 * `helm.sh/helm/v4` v4.3.2 and every dependency in its go.mod/go.sum; the build lands beside
 * etcd and kube-apiserver in `~/.cache/durable-sandbox/helm-v4.3.2/helm`, outside the checkout,
 * so fresh clones (CI) reuse it.
 *
 * Run directly (`npm run helm`) it prints the path on stdout, building it when missing (progress
 * and the time it took on stderr).
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { locateBinary, type TierBinary } from '../binaries/go-build.js';

/**
 * Helm v4.3.2: the `helm.sh/helm/v4/cmd/helm` main package. Found through HELM_BINARY, then
 * PATH (an operator's own `helm` of another version is used as it is), then the cache.
 */
export const HELM: TierBinary = {
  name: 'helm',
  envVar: 'HELM_BINARY',
  version: 'v4.3.2',
  moduleDir: fileURLToPath(new URL('./go/', import.meta.url)),
  mainPackage: 'helm.sh/helm/v4/cmd/helm',
};

/**
 * The helm binary's path, built once (a few minutes cold on 2 cores) when not found.
 * @throws Error when nothing is found and Go is missing or the build fails
 */
export function locateHelm(): Promise<string> {
  return locateBinary(HELM);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  locateHelm().then(
    (helm) => process.stdout.write(`${helm}\n`),
    (err: unknown) => {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
