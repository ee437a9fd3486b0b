//! Directives and the provider-agnostic LLM vocabulary.
