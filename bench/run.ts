// `npm run bench [-- name…]`: runs bench/<name>.ts (all when none given); each prints JSON lines.
import { readdirSync } from 'node:fs';

const available = readdirSync(new URL('.', import.meta.url))
  .filter(
    (f) =>
      f.endsWith('.ts') &&
      !['run.ts', 'emit.ts', 'client.ts', 'profile.ts'].includes(f) &&
      !f.endsWith('.test.ts'),
  )
  .map((f) => f.slice(0, -3))
  .sort();
const wanted = process.argv.slice(2).filter((a) => a !== '--');
const unknown = wanted.filter((w) => !available.includes(w));
if (unknown.length > 0) {
  process.stderr.write(`unknown bench: ${unknown.join(', ')} (have: ${available.join(', ')})\n`);
  process.exit(2);
}
for (const name of wanted.length > 0 ? wanted : available) {
  const mod = (await import(`./${name}.ts`)) as { default: () => Promise<void> };
  await mod.default();
}
