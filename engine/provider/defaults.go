package provider

// ModelInfo describes one model of a provider, as a "models" entry of
// config.json does.
type ModelInfo struct {
	ID              string   `json:"id"`
	Name            string   `json:"name,omitempty"`
	ContextWindow   int      `json:"contextWindow,omitempty"`
	MaxOutputTokens int      `json:"maxOutputTokens,omitempty"`
	Images          bool     `json:"images,omitempty"`
	Efforts         []string `json:"efforts,omitempty"`
}

// EnvProvider is a provider that its API key in the environment
// configures on its own, when config.json names no providers.
type EnvProvider struct {
	Name      string
	API       string
	BaseURL   string
	APIKeyEnv string
	Models    []ModelInfo
}

// EnvProviders lists the providers an environment variable alone sets up:
// "openai" from OPENAI_API_KEY and "anthropic" from ANTHROPIC_API_KEY, each
// with a few current models. config.json's "providers" replaces this list.
func EnvProviders() []EnvProvider {
	return []EnvProvider{
		{
			Name: "openai", API: APIOpenAI, BaseURL: DefaultOpenAIBaseURL, APIKeyEnv: "OPENAI_API_KEY",
			Models: []ModelInfo{
				{ID: "gpt-5", Name: "GPT-5", ContextWindow: 400000, MaxOutputTokens: 128000, Images: true,
					Efforts: []string{EffortMinimal, EffortLow, EffortMedium, EffortHigh}},
				{ID: "gpt-5-mini", Name: "GPT-5 mini", ContextWindow: 400000, MaxOutputTokens: 128000, Images: true,
					Efforts: []string{EffortMinimal, EffortLow, EffortMedium, EffortHigh}},
			},
		},
		{
			Name: "anthropic", API: APIAnthropic, BaseURL: DefaultAnthropicBaseURL, APIKeyEnv: "ANTHROPIC_API_KEY",
			Models: []ModelInfo{
				{ID: "claude-sonnet-4-5", Name: "Claude Sonnet 4.5", ContextWindow: 200000, MaxOutputTokens: 64000, Images: true,
					Efforts: []string{EffortOff, EffortLow, EffortMedium, EffortHigh, EffortXHigh}},
				{ID: "claude-haiku-4-5", Name: "Claude Haiku 4.5", ContextWindow: 200000, MaxOutputTokens: 64000, Images: true,
					Efforts: []string{EffortOff, EffortLow, EffortMedium, EffortHigh}},
			},
		},
	}
}
