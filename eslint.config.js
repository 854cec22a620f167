// ESLint flat config: typescript-eslint's recommended rules over every TypeScript file.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '.data/', 'dist/', 'coverage/', 'bench-results/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      // Workflow code must stay deterministic: no wall clock, no timers outside the workflow API.
      'no-restricted-globals': ['error', 'setInterval', 'setImmediate'],
      'no-restricted-imports': [
        'error',
        { patterns: ['node:*', '../activities/*', '../kubernetes/*', '../store/*', '../api/*'] },
      ],
    },
  },
);
