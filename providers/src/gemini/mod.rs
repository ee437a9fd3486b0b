//! The Gemini dialect (`models/{model}:streamGenerateContent?alt=sse`).
