// Ready-to-paste provider snippets for recording a person's own agent sessions. Pure.
export interface RecordingEndpoints {
  name: string;
  key: string;
  openai_base_url: string;
  anthropic_base_url: string;
}

export function recordingSnippets(rec: RecordingEndpoints, model: string): string {
  return `# Harness RL recording "${rec.name}"

New integrated terminals already have these variables (this window only):

\`\`\`sh
export OPENAI_BASE_URL=${rec.openai_base_url}
export OPENAI_API_KEY=${rec.key}
export ANTHROPIC_BASE_URL=${rec.anthropic_base_url}
export ANTHROPIC_AUTH_TOKEN=${rec.key}
\`\`\`

## Claude Code
Start \`claude\` in a new terminal of this window; it reads ANTHROPIC_BASE_URL and ANTHROPIC_AUTH_TOKEN.

## Codex (~/.codex/config.toml)
\`\`\`toml
model = "${model}"
model_provider = "harness-rl"

[model_providers.harness-rl]
name = "Harness RL recording"
base_url = "${rec.openai_base_url}"
env_key = "OPENAI_API_KEY"
wire_api = "responses"
\`\`\`

## Continue (config.yaml)
\`\`\`yaml
models:
  - name: Harness RL (${model})
    provider: openai
    model: ${model}
    apiBase: ${rec.openai_base_url}
    apiKey: ${rec.key}
\`\`\`

## Cline
API Provider: **OpenAI Compatible** · Base URL: \`${rec.openai_base_url}\` · API Key: \`${rec.key}\` · Model ID: \`${model}\`

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
  return {
    OPENAI_BASE_URL: rec.openai_base_url,
    OPENAI_API_KEY: rec.key,
    ANTHROPIC_BASE_URL: rec.anthropic_base_url,
    ANTHROPIC_AUTH_TOKEN: rec.key,
    ANTHROPIC_API_KEY: rec.key,
  };
}
