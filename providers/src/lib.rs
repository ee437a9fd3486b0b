//! LLM providers: streaming clients for the OpenAI, Anthropic and Gemini dialects.
