/**
 * Renders the plain manifests of deploy/ from the chart (deploy/chart) with its default values:
 * the one source of both. `helm template` prints every object under a `# Source:` line, sorted
 * by kind; each template becomes the file of deploy/ with its name (templates/api.yaml →
 * deploy/api.yaml), its objects back in the template's order, formatted with the repository's
 * Prettier settings. A template that renders nothing by default (templates/tokens-secret.yaml)
 * has no file. deploy/temporal-setup.yaml is Temporal's own and not the chart's.
 *
 *     npm run deploy:render            # rewrites deploy/*.yaml (temporal-setup.yaml aside)
 *
 * test/helm-chart.test.ts renders again and fails when a file differs.
 */
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import prettier from 'prettier';
import { locateHelm } from '../environments/helm/binaries.js';

/** deploy/, where the rendered files live. */
export const DEPLOY_DIR = fileURLToPath(new URL('../deploy/', import.meta.url));
/** The chart's directory. */
export const CHART_DIR = join(DEPLOY_DIR, 'chart');
/** The file of deploy/ that is not rendered from the chart (Temporal's own set-up). */
export const NOT_RENDERED = ['temporal-setup.yaml'];

const SOURCE_LINE = /^# Source: [^/]+\/templates\/(.+)$/;

/**
 * The files of deploy/ as the chart renders them with its default values.
 * @param helm path of the helm binary (environments/helm/binaries.ts)
 * @returns file name (`api.yaml`) → its text, Prettier-formatted
 * @throws Error with helm's stderr when `helm template` fails
 */
export async function renderDeployManifests(helm: string): Promise<Map<string, string>> {
  const { stdout } = await promisify(execFile)(
    helm,
    ['template', 'durable-sandbox', CHART_DIR, '--namespace', 'durable-sandbox'],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  const documents = new Map<string, string[]>();
  for (const chunk of stdout.split(/^---$/m)) {
    const lines = chunk.replace(/^\n/, '').split('\n');
    const source = SOURCE_LINE.exec(lines[0] ?? '')?.[1];
    if (!source) continue;
    documents.set(source, [...(documents.get(source) ?? []), lines.slice(1).join('\n').trimEnd()]);
  }
  const options = await prettier.resolveConfig(join(DEPLOY_DIR, 'api.yaml'));
  const files = new Map<string, string>();
  for (const [source, texts] of documents) {
    const ordered = inTemplateOrder(source, texts);
    const header =
      `# Rendered from deploy/chart/templates/${source} with the chart's default values by\n` +
      '# `npm run deploy:render` (docs/helm.md): edit the chart, then render.\n';
    const text = `${header}${ordered.join('\n---\n')}\n`;
    files.set(source, await prettier.format(text, { ...options, parser: 'yaml' }));
  }
  return files;
}

/**
 * A template's documents in the order the template writes them: helm sorts by kind (stably, so
 * documents of one kind keep their order); the template's own `kind:` lines give the order back.
 */
function inTemplateOrder(source: string, texts: string[]): string[] {
  const template = readFileSync(join(CHART_DIR, 'templates', source), 'utf8');
  const kinds = [...template.matchAll(/^kind: (\w+)$/gm)].map((match) => match[1]);
  const kindOf = (text: string) => /^kind: (\w+)$/m.exec(text)?.[1];
  return texts
    .map((text, index) => ({ text, index, rank: kinds.indexOf(kindOf(text)) }))
    .sort((a, b) => a.rank - b.rank || a.index - b.index)
    .map(({ text }) => text);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const helm = await locateHelm();
  for (const [file, text] of await renderDeployManifests(helm)) {
    writeFileSync(join(DEPLOY_DIR, file), text);
    process.stdout.write(`deploy/${file}\n`);
  }
}
