// A stand-in proposer for the example (no model needed): it knows three general edits to the math
// harness and makes the n-th one that still applies, n being the brief's proposal index. A real
// proposer is a coding agent pointed at a model (README.md); this one shows the loop on a laptop.
import { readFileSync, writeFileSync } from 'node:fs';

const RULES = [
  {
    name: 'retry on malformed answers',
    edits: [
      ['const MAX_TRIES = 1;', 'const MAX_TRIES = 4;'],
      ['  return answer.length > 0;', '  return /^\\d$/.test(answer);'],
    ],
  },
  {
    name: 'a shorter prompt',
    edits: [
      [
        'You are a careful calculator. Read the question, work it out, and reply with the result as a single digit and nothing else. Question: ',
        '',
      ],
    ],
  },
  { name: 'more retries', edits: [['const MAX_TRIES = 4;', 'const MAX_TRIES = 8;']] },
];

const brief = JSON.parse(readFileSync(process.env.HARNESS_RL_BRIEF_JSON, 'utf8'));
let text = readFileSync('agent.mjs', 'utf8');
const applicable = RULES.filter((r) => r.edits.every(([from]) => text.includes(from)));
const rule = applicable[brief.proposal];
if (!rule) {
  console.log('no edit left to try');
  process.exit(0);
}
for (const [from, to] of rule.edits) text = text.replace(from, to);
writeFileSync('agent.mjs', text);
console.log(`edited: ${rule.name}`);
