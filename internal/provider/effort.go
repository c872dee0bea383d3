package provider

// openAIReasoningEffort maps an effort to chat completions'
// reasoning_effort ("" means: send no reasoning_effort).
//
// OpenAI accepts none, minimal, low, medium, high and xhigh (which values a
// model takes varies; config.json's "efforts" per model says which ones
// Loop offers). "off" becomes "none"; "max" becomes "xhigh", the highest
// value the API has.
func openAIReasoningEffort(effort string) string {
	switch effort {
	case "", EffortDefault:
		return ""
	case EffortOff:
		return "none"
	case EffortMax:
		return "xhigh"
	default:
		return effort
	}
}

// anthropicThinkingBudget maps an effort to the budget_tokens of extended
// thinking; 0 means thinking stays off ("default" and "off").
func anthropicThinkingBudget(effort string) int {
	switch effort {
	case EffortMinimal:
		return 1024 // the API's minimum
	case EffortLow:
		return 4096
	case EffortMedium:
		return 8192
	case EffortHigh:
		return 16384
	case EffortXHigh:
		return 32000
	case EffortMax:
		return 64000
	default:
		return 0
	}
}

// Anthropic's max_tokens defaults.
const (
	anthropicDefaultMaxTokens = 8192
	anthropicMinBudget        = 1024
	// anthropicAnswerRoom is what max_tokens leaves for the answer beyond
	// the thinking budget when the caller set no limit.
	anthropicAnswerRoom = 8192
)

// anthropicTokens returns max_tokens and budget_tokens for a request.
// max_tokens counts thinking and answer together and must exceed the
// budget. With no MaxOutputTokens, max_tokens is raised to budget + 8192.
// An explicit MaxOutputTokens is taken as the model's hard limit: the
// budget shrinks below it instead (keeping at least 1024 tokens for the
// answer), and only a limit too small for the minimum budget is raised.
func anthropicTokens(maxOutput int, effort string) (maxTokens, budget int) {
	budget = anthropicThinkingBudget(effort)
	if maxOutput <= 0 {
		if budget == 0 {
			return anthropicDefaultMaxTokens, 0
		}
		return budget + anthropicAnswerRoom, budget
	}
	maxTokens = maxOutput
	if budget == 0 {
		return maxTokens, 0
	}
	if budget > maxTokens-anthropicMinBudget {
		budget = maxTokens - anthropicMinBudget
	}
	if budget < anthropicMinBudget {
		return 2 * anthropicMinBudget, anthropicMinBudget
	}
	return maxTokens, budget
}
