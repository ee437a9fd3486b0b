//! Configuration from the environment and explicit settings; keys never printed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use std::collections::HashMap;

use std::time::Duration;

use motet_directives::{LlmRequest, Message};
use motet_providers::{
    ApiKey, Limits, LlmClient, ProviderError, ProviderKind, Providers, ProvidersConfig,
    RetryPolicy, Timeouts,
};

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
    ]))
    .unwrap();
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
    ]))
    .unwrap();
    assert_eq!(
        config.resolve(ProviderKind::Gemini).unwrap().1,
        Some(ApiKey::new("AIza-gemini"))
    );
    assert!(config.resolve(ProviderKind::Anthropic).is_err());
}

#[test]
fn explicit_settings_override_the_environment() {
    let config = ProvidersConfig::from_vars(vars(&[("ANTHROPIC_API_KEY", "sk-env")]))
        .unwrap()
        .with_api_key(ProviderKind::Anthropic, ApiKey::new("sk-explicit"))
        .with_base_url(ProviderKind::Anthropic, "http://127.0.0.1:9/");
    let (url, key) = config.resolve(ProviderKind::Anthropic).unwrap();
    assert_eq!(url, "http://127.0.0.1:9");
    assert_eq!(key, Some(ApiKey::new("sk-explicit")));
}

#[test]
fn missing_settings_name_the_variable_never_a_value() {
    let config =
        ProvidersConfig::from_vars(vars(&[("OPENAI_API_KEY", "sk-present-SECRET")])).unwrap();
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
    )]))
    .unwrap();
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

#[test]
fn limits_come_from_the_environment_in_seconds_with_decimals() {
    let config = ProvidersConfig::from_vars(vars(&[
        ("MOTET_CONNECT_TIMEOUT", "2.5"),
        ("MOTET_FIRST_BYTE_TIMEOUT", "90"),
        ("MOTET_IDLE_TIMEOUT", " 0.25 "),
        ("MOTET_MAX_RETRIES", "0"),
        ("MOTET_INITIAL_BACKOFF", "0"),
        ("MOTET_MAX_BACKOFF", "1.5"),
        ("MOTET_MAX_RESPONSE_BYTES", "1048576"),
    ]))
    .unwrap();
    assert_eq!(
        config.timeouts,
        Timeouts {
            connect: Duration::from_millis(2500),
            first_byte: Duration::from_secs(90),
            idle: Duration::from_millis(250),
        }
    );
    assert_eq!(config.retry.max_retries, 0);
    assert_eq!(config.retry.initial_backoff, Duration::ZERO);
    assert_eq!(config.retry.max_backoff, Duration::from_millis(1500));
    assert_eq!(config.limits.max_response_bytes, 1 << 20);

    // Unset or empty: the defaults.
    let config = ProvidersConfig::from_vars(vars(&[("MOTET_IDLE_TIMEOUT", "")])).unwrap();
    assert_eq!(config.timeouts, Timeouts::default());
    assert_eq!(config.retry, RetryPolicy::default());
    assert_eq!(config.limits, Limits::default());
}

#[test]
fn a_limit_that_cannot_be_used_is_an_error_naming_the_variable() {
    let cases = [
        ("MOTET_CONNECT_TIMEOUT", "ten", "not a number of seconds"),
        ("MOTET_FIRST_BYTE_TIMEOUT", "0", "more than 0"),
        ("MOTET_IDLE_TIMEOUT", "-1", "more than 0"),
        ("MOTET_IDLE_TIMEOUT", "inf", "more than 0"),
        ("MOTET_IDLE_TIMEOUT", "1e30", "more than 0"),
        ("MOTET_IDLE_TIMEOUT", "30s", "not a number of seconds"),
        ("MOTET_MAX_RETRIES", "-1", "whole number of retries"),
        ("MOTET_MAX_RETRIES", "2.5", "whole number of retries"),
        ("MOTET_INITIAL_BACKOFF", "NaN", "0 or more"),
        ("MOTET_MAX_BACKOFF", "-0.5", "0 or more"),
        ("MOTET_MAX_RESPONSE_BYTES", "0", "at least 1 byte"),
        ("MOTET_MAX_RESPONSE_BYTES", "16MiB", "whole number of bytes"),
    ];
    for (name, value, why) in cases {
        match ProvidersConfig::from_vars(vars(&[(name, value)])) {
            Err(ProviderError::Config { message }) => {
                assert!(
                    message.starts_with(&format!("{name}=`{value}`")),
                    "{name}={value}: {message}"
                );
                assert!(message.contains(why), "{name}={value}: {message}");
            }
            other => panic!("{name}={value}: {other:?}"),
        }
    }
}

#[test]
fn the_environment_goes_over_an_applications_own_settings() {
    let own = ProvidersConfig::new()
        .with_base_url(ProviderKind::OpenAiCompat, "http://file/v1")
        .with_timeouts(Timeouts {
            idle: Duration::from_secs(5),
            ..Timeouts::default()
        })
        .with_limits(Limits {
            max_response_bytes: 1000,
        });
    let config = own
        .clone()
        .with_vars(vars(&[("MOTET_IDLE_TIMEOUT", "7")]))
        .unwrap();
    assert_eq!(config.timeouts.idle, Duration::from_secs(7));
    assert_eq!(config.limits.max_response_bytes, 1000, "kept: not set");
    assert_eq!(
        config
            .settings(ProviderKind::OpenAiCompat)
            .base_url
            .as_deref(),
        Some("http://file/v1"),
        "kept: not set"
    );
    let config = own
        .with_vars(vars(&[("MOTET_OPENAI_COMPAT_BASE_URL", "http://env/v1/")]))
        .unwrap();
    assert_eq!(
        config
            .settings(ProviderKind::OpenAiCompat)
            .base_url
            .as_deref(),
        Some("http://env/v1")
    );
}
