//! The providers' capability table feeds the agents' context policy: a known model gets a
//! budget from its context window, an unknown one the default.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a failed expectation is a failed test

use motet::agents::ContextPolicy;
use motet::directives::ModelRef;
use motet::providers::models::capabilities;

fn window(model: &ModelRef) -> Option<u32> {
    capabilities(model).map(|caps| caps.context_window)
}

#[test]
fn a_known_model_sizes_the_policy_from_its_window() {
    let sonnet: ModelRef = "anthropic:claude-sonnet-4-5".parse().unwrap();
    let gemini: ModelRef = "gemini:gemini-3-pro-preview".parse().unwrap();
    let unknown: ModelRef = "openai-compat:smollm2-135m".parse().unwrap();
    let for_sonnet = ContextPolicy::for_model(&sonnet, &window);
    let for_gemini = ContextPolicy::for_model(&gemini, &window);
    assert_eq!(for_sonnet, ContextPolicy::for_context_window(200_000));
    assert_eq!(for_gemini, ContextPolicy::for_context_window(1_048_576));
    assert!(for_gemini.input_budget() > for_sonnet.input_budget());
    assert_eq!(
        ContextPolicy::for_model(&unknown, &window),
        ContextPolicy::new()
    );
}
