/**
 * Finds the binaries of the Temporal server tier, building them once from the Go module proxy
 * when nothing else is available: the Temporal server (`go.temporal.io/server/cmd/server`),
 * its SQL schema tool (`cmd/tools/sql`, shipped in images as `temporal-sql-tool`) and the
 * Temporal UI server (`github.com/temporalio/ui-server/v2`). One wrapper module
 * (environments/temporal-tier/go) pins all three at the versions the pinned Temporal CLI
 * v1.5.1 embeds (server v1.29.1, ui-server v2.42.1), with the CLI's own dependency versions.
 *
 * Run directly (`npm run temporal-tier`) it prints the three paths on stdout, building what is
 * missing (progress and the time it took on stderr).
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { locateBinary, type TierBinary } from '../binaries/go-build.js';

const MODULE_DIR = fileURLToPath(new URL('./go/', import.meta.url));

/** The Temporal server v1.29.1 (frontend, history, matching, worker services in one process). */
export const TEMPORAL_SERVER: TierBinary = {
  name: 'temporal-server',
  envVar: 'TEMPORAL_SERVER_BINARY',
  version: 'v1.29.1',
  moduleDir: MODULE_DIR,
  mainPackage: 'go.temporal.io/server/cmd/server',
  trimpath: false,
};

/** The server's SQL schema tool v1.29.1: creates the database, sets up and updates schemas. */
export const TEMPORAL_SQL_TOOL: TierBinary = {
  name: 'temporal-sql-tool',
  envVar: 'TEMPORAL_SQL_TOOL_BINARY',
  version: 'v1.29.1',
  moduleDir: MODULE_DIR,
  mainPackage: 'go.temporal.io/server/cmd/tools/sql',
  trimpath: false,
};

/** The Temporal UI server v2.42.1 (the web UI, its assets embedded), as the CLI embeds it. */
export const TEMPORAL_UI_SERVER: TierBinary = {
  name: 'temporal-ui-server',
  envVar: 'TEMPORAL_UI_SERVER_BINARY',
  version: 'v2.42.1',
  moduleDir: MODULE_DIR,
  mainPackage: 'github.com/temporalio/ui-server/v2/cmd/server',
  trimpath: false,
};

/** Paths of the tier's three binaries. */
export interface TemporalTierBinaries {
  server: string;
  sqlTool: string;
  uiServer: string;
}

/**
 * The tier's three binaries, located or built one after the other (never at once: each build
 * needs the cores). After the Temporal CLI's `go install` (same module versions, so Go's build cache holds
 * nearly every package) the three build in about 15 s; from a cold cache, minutes.
 * @throws Error when one is missing and cannot be built (see {@link locateBinary})
 */
export async function locateTemporalTierBinaries(): Promise<TemporalTierBinaries> {
  const server = await locateBinary(TEMPORAL_SERVER);
  const sqlTool = await locateBinary(TEMPORAL_SQL_TOOL);
  const uiServer = await locateBinary(TEMPORAL_UI_SERVER);
  return { server, sqlTool, uiServer };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  locateTemporalTierBinaries().then(
    ({ server, sqlTool, uiServer }) => process.stdout.write(`${server}\n${sqlTool}\n${uiServer}\n`),
    (err: unknown) => {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exit(1);
    },
  );
}
