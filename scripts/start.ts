/**
 * `npm start`: the embedded stack. For now it starts the Temporal dev server (state in
 * DATA_DIR, UI on) and keeps it running until Ctrl-C.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig } from '../config/index.js';
import { startDevServer } from './dev-server.js';

const config = loadConfig();
const dataDir = resolve(config.dataDir);
mkdirSync(dataDir, { recursive: true });
const server = await startDevServer({
  port: 7233,
  uiPort: 8233,
  dbFile: join(dataDir, 'temporal.db'),
});
console.log(`Temporal frontend: ${server.address}`);
console.log(`Temporal UI:       ${server.uiUrl}`);
console.log('The API and worker are not wired into the embedded stack yet. Ctrl-C stops.');
const stop = async (): Promise<void> => {
  await server.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
setInterval(() => {}, 1 << 30);
