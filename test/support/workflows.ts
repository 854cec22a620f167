// The workflow bundle used by every suite: the production workflows plus test-only ones.
export * from '../../src/workflows/index.js';
export * from './harness-workflows.js';
export * from '../../clients/examples/nexus-caller/workflows.js';
