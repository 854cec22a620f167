// The workflow bundle used by every suite: the production workflows plus test-only ones.
export * from '../../workflows/index.js';
export * from './harness-workflows.js';
export * from '../../examples/nexus-caller/workflows.js';
