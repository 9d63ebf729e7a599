import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: [
      'daemon/**/*.test.ts',
      'extension/**/*.test.ts',
      'webview/**/*.test.ts',
      'test/**/*.test.ts',
      'examples/**/*.test.ts',
    ],
    exclude: ['test/vscode/**', '**/node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
