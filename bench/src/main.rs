//! `motet-bench`: motet's benchmarks, one scenario per run, results as JSON lines.
//!
//! ```text
//! cargo run --release -p motet-bench -- <scenario> [--json]
//! cargo run --release -p motet-bench -- all --json
//! ```
//!
//! Every scenario reports motet's own figure beside its floor (a bare ractor actor, a
//! hand-written loop, serde_json), so ratios rather than absolute times carry the claim.
//! With `--json` each result is one line:
//! `{"scenario": "...", "variant": "...", "n": ..., "ns_per_op": ..., "ops_per_sec": ...}`
//! plus scenario-specific fields.
//!
//! `budget` checks a guarantee rather than a speed (how far spending passes a hard budget,
//! against one call's `max_tokens`), so it has no floor.

mod alloc;
mod report;
mod scenarios;

use std::process::ExitCode;

use report::Report;

/// Counts heap bytes while the `memory` scenario asks it to; otherwise `System` as is.
#[global_allocator]
static ALLOC: alloc::Counting = alloc::Counting;

fn main() -> ExitCode {
    // A telemetry variant of `react`, run in a process of its own by the parent (hidden).
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("__react_child") {
        return match argv.get(2).and_then(|v| scenarios::react_child(v)) {
            Some((elapsed, received)) => {
                println!("{} {received}", elapsed.as_nanos());
                ExitCode::SUCCESS
            }
            None => ExitCode::FAILURE,
        };
    }
    let mut args = std::env::args().skip(1);
    let mut scenario = None;
    let mut json = false;
    for arg in args.by_ref() {
        match arg.as_str() {
            "--json" => json = true,
            "-h" | "--help" => {
                print_usage();
                return ExitCode::SUCCESS;
            }
            other if scenario.is_none() && !other.starts_with('-') => {
                scenario = Some(other.to_owned());
            }
            other => {
                eprintln!("motet-bench: unexpected argument `{other}`");
                print_usage();
                return ExitCode::from(2);
            }
        }
    }
    let Some(scenario) = scenario else {
        print_usage();
        return ExitCode::from(2);
    };
    let names: Vec<&str> = if scenario == "all" {
        scenarios::ALL.iter().map(|(name, _)| *name).collect()
    } else {
        vec![scenario.as_str()]
    };
    for name in names {
        let mut known = scenarios::ALL.iter().chain(scenarios::ON_REQUEST);
        let Some((_, run)) = known.find(|(n, _)| *n == name) else {
            eprintln!("motet-bench: unknown scenario `{name}`");
            print_usage();
            return ExitCode::from(2);
        };
        let reports = run();
        if reports.is_empty() {
            // Every scenario reports at least its own figure and its floor: nothing means its
            // setup failed (a runtime, an agent or a store could not be made).
            eprintln!("motet-bench: scenario `{name}` produced no report: its setup failed");
            return ExitCode::FAILURE;
        }
        for report in reports {
            emit(&report, json);
        }
    }
    ExitCode::SUCCESS
}

fn emit(report: &Report, json: bool) {
    if json {
        println!("{}", report.to_json_line());
    } else {
        println!("{}", report.to_human_line());
    }
}

fn print_usage() {
    let names: Vec<&str> = scenarios::ALL.iter().map(|(name, _)| *name).collect();
    let served: Vec<&str> = scenarios::ON_REQUEST
        .iter()
        .map(|(name, _)| *name)
        .collect();
    eprintln!("usage: motet-bench <scenario|all> [--json]");
    eprintln!("scenarios: {}", names.join(", "));
    eprintln!(
        "against a local llama.cpp server (MOTET_LOCAL_LLM_URL), not in `all`: {}",
        served.join(", ")
    );
}
