// Ready-to-paste agent settings for recording a person's own agent sessions: the agents' settings
// (daemon/agents/settings.ts, the source docs/agents.md is generated from) with the recording's URL,
// key and model filled in. Pure.
import { AGENT_SETTINGS, settingsMarkdown, shellWord, terminalEnv } from '../../daemon/agents/settings';

export interface RecordingEndpoints {
  name: string;
  key: string;
  openai_base_url: string;
  anthropic_base_url: string;
}

export function recordingSnippets(rec: RecordingEndpoints, model: string): string {
  const e = {
    openaiBaseUrl: rec.openai_base_url,
    anthropicBaseUrl: rec.anthropic_base_url,
    key: rec.key,
    model,
  };
  const env = Object.entries(recordingEnv(rec))
    .map(([name, value]) => `export ${name}=${shellWord(value)}`)
    .join('\n');
  const agents = AGENT_SETTINGS.filter((a) => a.recordingSnippet)
    .map((a) => `## ${a.name} — ${a.wire}\n\n${settingsMarkdown(a, e, { command: false })}`)
    .join('\n\n');
  const more = AGENT_SETTINGS.filter((a) => !a.recordingSnippet)
    .map((a) => a.name)
    .join(', ');
  return `# Harness RL recording "${rec.name}"

New integrated terminals already have these variables (this window only):

\`\`\`sh
${env}
\`\`\`

${agents}

More agents (${more}) and their pitfalls: docs/agents.md.

## Check it works
\`\`\`sh
curl -s "$OPENAI_BASE_URL/chat/completions" -H "Authorization: Bearer $OPENAI_API_KEY" \\
  -H 'content-type: application/json' \\
  -d '{"model":"${model}","messages":[{"role":"user","content":"Say hello"}],"max_tokens":16}'
\`\`\`
`;
}

/** The environment variables a recording sets for new terminals. */
export function recordingEnv(rec: RecordingEndpoints): Record<string, string> {
  return terminalEnv({
    openaiBaseUrl: rec.openai_base_url,
    anthropicBaseUrl: rec.anthropic_base_url,
    key: rec.key,
  });
}
