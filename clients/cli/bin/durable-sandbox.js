#!/usr/bin/env node
// The `durable-sandbox` command (package.json `bin`): runs clients/cli/main.ts through tsx's loader,
// without `npm run` in between (the project has no build step).
import { register } from 'tsx/esm/api';

register();
await import('../main.ts');
