//! Configuration from the environment and explicit settings; keys never printed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::collections::HashMap;

use motet_directives::{LlmRequest, Message};
use motet_providers::{ApiKey, LlmClient, ProviderError, ProviderKind, Providers, ProvidersConfig};

fn vars(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name| map.get(name).cloned()
}

#[test]
fn the_environment_as_the_sdks_read_it() {
    let config = ProvidersConfig::from_vars(vars(&[
        ("OPENAI_API_KEY", "sk-openai"),
        ("OPENAI_BASE_URL", "https://proxy.example/v1/"),
        ("ANTHROPIC_API_KEY", "sk-ant"),
        ("GOOGLE_API_KEY", "AIza-google"),
    ]));
    let (url, key) = config.resolve(ProviderKind::OpenAi).unwrap();
    assert_eq!(url, "https://proxy.example/v1", "trailing slash dropped");
    assert_eq!(key, Some(ApiKey::new("sk-openai")));
    let (url, _) = config.resolve(ProviderKind::Anthropic).unwrap();
    assert_eq!(url, "https://api.anthropic.com");
    let (_, key) = config.resolve(ProviderKind::Gemini).unwrap();
    assert_eq!(
        key,
        Some(ApiKey::new("AIza-google")),
        "GOOGLE_API_KEY as a fallback"
    );

    // GEMINI_API_KEY wins over GOOGLE_API_KEY; empty values count as unset.
    let config = ProvidersConfig::from_vars(vars(&[
        ("GEMINI_API_KEY", "AIza-gemini"),
        ("GOOGLE_API_KEY", "AIza-google"),
        ("ANTHROPIC_API_KEY", ""),
    ]));
    assert_eq!(
        config.resolve(ProviderKind::Gemini).unwrap().1,
        Some(ApiKey::new("AIza-gemini"))
    );
    assert!(config.resolve(ProviderKind::Anthropic).is_err());
}

#[test]
fn explicit_settings_override_the_environment() {
    let config = ProvidersConfig::from_vars(vars(&[("ANTHROPIC_API_KEY", "sk-env")]))
        .with_api_key(ProviderKind::Anthropic, ApiKey::new("sk-explicit"))
        .with_base_url(ProviderKind::Anthropic, "http://127.0.0.1:9/");
    let (url, key) = config.resolve(ProviderKind::Anthropic).unwrap();
    assert_eq!(url, "http://127.0.0.1:9");
    assert_eq!(key, Some(ApiKey::new("sk-explicit")));
}

#[test]
fn missing_settings_name_the_variable_never_a_value() {
    let config = ProvidersConfig::from_vars(vars(&[("OPENAI_API_KEY", "sk-present-SECRET")]));
    match config.resolve(ProviderKind::Anthropic) {
        Err(ProviderError::Config { message }) => {
            assert!(message.contains("ANTHROPIC_API_KEY"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    match config.resolve(ProviderKind::Gemini) {
        Err(ProviderError::Config { message }) => {
            assert!(
                message.contains("GEMINI_API_KEY or GOOGLE_API_KEY"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    match config.resolve(ProviderKind::OpenAiCompat) {
        Err(ProviderError::Config { message }) => {
            assert!(
                message.contains("MOTET_OPENAI_COMPAT_BASE_URL"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    // A compatible server needs no key.
    let compat = ProvidersConfig::from_vars(vars(&[(
        "MOTET_OPENAI_COMPAT_BASE_URL",
        "http://127.0.0.1:8089/v1",
    )]));
    assert_eq!(
        compat.resolve(ProviderKind::OpenAiCompat).unwrap(),
        ("http://127.0.0.1:8089/v1".to_owned(), None)
    );
}

#[test]
fn keys_print_as_redacted_everywhere() {
    let key = ApiKey::new("sk-very-SECRET");
    assert_eq!(format!("{key}"), "[redacted]");
    assert_eq!(format!("{key:?}"), "[redacted]");
    let config = ProvidersConfig::new().with_api_key(ProviderKind::OpenAi, key);
    let printed = format!("{config:?}");
    assert!(!printed.contains("SECRET"), "{printed}");
    let providers = Providers::new(config).unwrap();
    let client = providers
        .client_for(&"openai:gpt-5.2".parse().unwrap())
        .unwrap();
    assert!(!format!("{providers:?} {client:?}").contains("SECRET"));
}

#[tokio::test]
async fn an_unknown_provider_is_a_config_error_before_any_request() {
    let providers = Providers::new(ProvidersConfig::new()).unwrap();
    let req = LlmRequest::new("mistral:large".parse().unwrap(), vec![Message::user("hi")]);
    match providers.complete(req).await {
        Err(ProviderError::Config { message }) => assert!(message.contains("mistral"), "{message}"),
        other => panic!("{other:?}"),
    }
}
