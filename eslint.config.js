// ESLint flat config: typescript-eslint's recommended rules over every TypeScript file.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      '.data/',
      'dist/',
      'clients/typescript/dist/',
      'coverage/',
      'bench-results/',
    ],
  },
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
    // Type-aware rules: a promise nobody awaits, returns or marks `void` loses its rejection.
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
    },
  },
  {
    // The contract is imported by the workflow bundle: pure TypeScript, no Node, no other layer.
    files: ['contract/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'contract/ is pure: no Node APIs' },
            { group: ['../*'], message: 'contract/ imports nothing outside contract/' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/workflows/**/*.ts'],
    rules: {
      // Workflow code must stay deterministic: no wall clock, no timers outside the workflow API.
      'no-restricted-globals': ['error', 'setInterval', 'setImmediate'],
      // Type-only imports of activity signatures are erased from the bundle and allowed.
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['node:*'], message: 'workflow code is deterministic: no Node APIs' },
            {
              group: [
                '../activities/*',
                '../kubernetes/*',
                '../store/*',
                '../api/*',
                '../config/*',
              ],
              message: 'workflow code may only import types from these',
              allowTypeImports: true,
            },
          ],
        },
      ],
    },
  },
);
