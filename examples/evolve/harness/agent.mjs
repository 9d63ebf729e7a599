// The math harness that evolution starts from (plain Node, no dependencies, so a proposer can edit it):
// asks the model one arithmetic question through OPENAI_BASE_URL and prints its answer as the last
// stdout line {"answer": "..."}; ../verify.mjs scores it. HARNESS_RL_SEED (when set) seeds sampling.
const PROMPT = (q) =>
  `You are a careful calculator. Read the question, work it out, and reply with the result as a single digit and nothing else. Question: ${q}`;
const MAX_TRIES = 1;
const MAX_TOKENS = 4;

/** What counts as the model's answer in its reply: its first digit. */
function extract(text) {
  return (text.match(/\d/) ?? [''])[0];
}

/** Whether a reply is worth keeping (else the harness asks again while tries remain). */
function wellFormed(answer) {
  return answer.length > 0;
}

async function ask(messages, seed) {
  const res = await fetch(`${process.env.OPENAI_BASE_URL}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${process.env.OPENAI_API_KEY}` },
    body: JSON.stringify({
      model: process.env.HARNESS_RL_MODEL ?? 'reference',
      messages,
      max_tokens: MAX_TOKENS,
      temperature: 1,
      ...(seed === undefined ? {} : { seed }),
    }),
  });
  if (!res.ok) throw new Error(`backend answered ${res.status}: ${await res.text()}`);
  const body = await res.json();
  return body.choices?.[0]?.message?.content ?? '';
}

const task = JSON.parse(process.env.HARNESS_RL_TASK ?? 'null');
const seed = process.env.HARNESS_RL_SEED ? Number(process.env.HARNESS_RL_SEED) : undefined;
const question = `${task.a}${task.op}${task.b}=?`;
let answer = '';
for (let i = 0; i < MAX_TRIES; i++) {
  answer = extract(
    await ask([{ role: 'user', content: PROMPT(question) }], seed === undefined ? undefined : seed * 16 + i),
  );
  if (wellFormed(answer)) break;
}
console.log(JSON.stringify({ answer }));
