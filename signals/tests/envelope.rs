//! The envelope: round trips of motet's own signals and of the CloudEvents 1.0 spec's JSON
//! examples, and the typed errors for invalid envelopes.

#![allow(
    clippy::unwrap_used,
    reason = "test helpers: a failed unwrap is a failed test"
)]

use motet_signals::{Signal, SignalData, SignalError, SignalId, TraceContext};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fn parse(value: Value) -> Result<Signal, SignalError> {
    Signal::from_json(&value.to_string())
}

/// Serializes, parses back, and checks both the value and the JSON text are stable.
fn round_trip(signal: &Signal) -> Signal {
    let text = signal.to_json().unwrap();
    let back = Signal::from_json(&text).unwrap();
    assert_eq!(&back, signal);
    assert_eq!(back.to_json().unwrap(), text);
    back
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Input {
    text: String,
    turn: u32,
}

#[test]
fn motet_signal_round_trips_with_every_extension() {
    let signal = Signal::builder("agent.request", "motet://agents/planner")
        .with_id("0190c5a8-0000-7000-8000-000000000001")
        .with_time(Some("2026-11-23T00:00:00.123Z".parse().unwrap()))
        .with_subject("thread-9")
        .with_data(Input {
            text: "hello".into(),
            turn: 3,
        })
        .with_correlation_id("corr-1")
        .with_causation_id("cause-1")
        .with_thread_id("thread-9")
        .with_request_id("req-4")
        .with_trace(TraceContext {
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
            tracestate: Some("congo=t61rcWkgMzE".into()),
        })
        .with_extension("tenant", "acme")
        .build()
        .unwrap();
    let back = round_trip(&signal);
    assert_eq!(
        back.data_as::<Input>().unwrap(),
        Input {
            text: "hello".into(),
            turn: 3
        }
    );

    let value: Value = serde_json::from_str(&signal.to_json().unwrap()).unwrap();
    assert_eq!(value["specversion"], "1.0");
    assert_eq!(value["type"], "agent.request");
    assert_eq!(value["datacontenttype"], "application/json");
    assert_eq!(value["correlationid"], "corr-1");
    assert_eq!(value["causationid"], "cause-1");
    assert_eq!(value["threadid"], "thread-9");
    assert_eq!(value["requestid"], "req-4");
    assert_eq!(
        value["traceparent"],
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    );
    assert_eq!(value["tracestate"], "congo=t61rcWkgMzE");
    assert_eq!(value["tenant"], "acme");
    assert_eq!(value["time"], "2026-11-23T00:00:00.123Z");
    assert_eq!(value["data"], json!({"text": "hello", "turn": 3}));
    assert!(value.get("data_base64").is_none());
}

#[test]
fn binary_data_travels_as_data_base64() {
    let signal = Signal::builder("tool.result", "tool")
        .with_binary_data(vec![0u8, 1, 2, 254, 255], "application/octet-stream")
        .build()
        .unwrap();
    let value: Value = serde_json::from_str(&signal.to_json().unwrap()).unwrap();
    assert_eq!(value["data_base64"], "AAEC/v8=");
    assert!(value.get("data").is_none());
    let back = round_trip(&signal);
    assert_eq!(back.data(), &SignalData::Binary(vec![0, 1, 2, 254, 255]));
    assert_eq!(back.data_as::<Value>(), Err(SignalError::BinaryData));
}

#[test]
fn builder_defaults_to_a_fresh_time_ordered_uuid_v7_and_now() {
    let first = Signal::builder("llm.result", "a").build().unwrap();
    let second = Signal::builder("llm.result", "a").build().unwrap();
    let a = uuid::Uuid::parse_str(first.id().as_str()).unwrap();
    let b = uuid::Uuid::parse_str(second.id().as_str()).unwrap();
    assert_eq!(a.get_version_num(), 7);
    assert!(a < b, "v7 ids are time-ordered");
    assert!(first.time().is_some());
    assert_eq!(first.data(), &SignalData::None);
    let untimed = Signal::builder("llm.result", "a")
        .with_time(None)
        .build()
        .unwrap();
    assert!(untimed.time().is_none());
    assert!(!untimed.to_json().unwrap().contains("\"time\""));
}

#[test]
fn caused_by_threads_correlation_and_trace_through() {
    let input = Signal::builder("agent.request", "user")
        .with_thread_id("t1")
        .with_request_id("r1")
        .with_trace(TraceContext {
            traceparent: Some("00-aa-bb-01".into()),
            tracestate: None,
        })
        .build()
        .unwrap();
    let call = Signal::builder("llm.call", "agent")
        .caused_by(&input)
        .build()
        .unwrap();
    assert_eq!(call.causation_id(), Some(input.id()));
    // The first cause has no correlation id, so its own id starts the chain.
    assert_eq!(call.correlation_id(), Some(input.id().as_str()));
    assert_eq!(call.thread_id(), Some("t1"));
    assert_eq!(call.request_id(), Some("r1"));
    assert_eq!(call.trace().traceparent.as_deref(), Some("00-aa-bb-01"));

    let result = Signal::builder("llm.result", "provider")
        .build()
        .unwrap()
        .caused_by(&call);
    assert_eq!(result.causation_id(), Some(call.id()));
    assert_eq!(result.correlation_id(), Some(input.id().as_str()));
    assert_eq!(result.thread_id(), Some("t1"));
    assert_ne!(result.id(), call.id());
}

/// The JSON format spec's example with JSON data (`subject: null` counts as absent).
#[test]
fn spec_example_with_json_data() {
    let spec = json!({
        "specversion" : "1.0",
        "type" : "com.example.someevent",
        "source" : "/mycontext",
        "subject": null,
        "id" : "C234-1234-1234",
        "time" : "2018-04-05T17:31:00Z",
        "comexampleextension1" : "value",
        "comexampleothervalue" : 5,
        "datacontenttype" : "application/json",
        "data" : {
            "appinfoA" : "abc",
            "appinfoB" : 123,
            "appinfoC" : true
        }
    });
    let signal = parse(spec.clone()).unwrap();
    assert_eq!(signal.id(), &SignalId::from("C234-1234-1234"));
    assert_eq!(signal.source(), "/mycontext");
    assert_eq!(signal.signal_type().as_str(), "com.example.someevent");
    assert_eq!(signal.subject(), None);
    assert_eq!(signal.time().unwrap().to_string(), "2018-04-05T17:31:00Z");
    assert_eq!(
        signal.extension("comexampleextension1"),
        Some(&json!("value"))
    );
    assert_eq!(signal.extension("comexampleothervalue"), Some(&json!(5)));
    assert_eq!(signal.data_as::<Value>().unwrap()["appinfoB"], 123);

    let mut expected = spec;
    expected.as_object_mut().unwrap().remove("subject");
    let out: Value = serde_json::from_str(&signal.to_json().unwrap()).unwrap();
    assert_eq!(out, expected);
    round_trip(&signal);
}

/// The JSON format spec's binary example (its placeholder payload replaced by real base64).
#[test]
fn spec_example_with_data_base64() {
    let spec = json!({
        "specversion" : "1.0",
        "type" : "com.example.someevent",
        "source" : "/mycontext",
        "id" : "A234-1234-1234",
        "time" : "2018-04-05T17:31:00Z",
        "comexampleextension1" : "value",
        "comexampleothervalue" : 5,
        "datacontenttype" : "application/vnd.apache.thrift.binary",
        "data_base64" : "aGVsbG8gdGhyaWZ0AAH/"
    });
    let signal = parse(spec.clone()).unwrap();
    assert_eq!(
        signal.data(),
        &SignalData::Binary(b"hello thrift\x00\x01\xff".to_vec())
    );
    assert_eq!(
        signal.data_content_type(),
        Some("application/vnd.apache.thrift.binary")
    );
    let out: Value = serde_json::from_str(&signal.to_json().unwrap()).unwrap();
    assert_eq!(out, spec);
}

/// The JSON format spec's example of a non-JSON content type carried as a JSON string.
#[test]
fn spec_example_with_xml_string_data() {
    let spec = json!({
        "specversion" : "1.0",
        "type" : "com.example.someevent",
        "source" : "/mycontext",
        "id" : "B234-1234-1234",
        "time" : "2018-04-05T17:31:00Z",
        "comexampleextension1" : "value",
        "comexampleothervalue" : 5,
        "unsetextension": null,
        "datacontenttype" : "application/xml",
        "data" : "<much wow=\"xml\"/>"
    });
    let signal = parse(spec).unwrap();
    assert_eq!(signal.data_as::<String>().unwrap(), "<much wow=\"xml\"/>");
    assert_eq!(signal.extension("unsetextension"), None);
    round_trip(&signal);
}

#[test]
fn minimal_spec_event_keeps_only_required_attributes() {
    let spec = json!({"specversion": "1.0", "id": "1", "source": "/s", "type": "a.b"});
    let signal = parse(spec.clone()).unwrap();
    assert_eq!(signal.time(), None);
    assert_eq!(signal.data_as::<Value>(), Err(SignalError::NoData));
    let out: Value = serde_json::from_str(&signal.to_json().unwrap()).unwrap();
    assert_eq!(out, spec);
}

#[test]
fn invalid_envelopes_give_typed_errors() {
    let base = json!({"specversion": "1.0", "id": "1", "source": "/s", "type": "a.b"});
    let with = |key: &str, value: Value| {
        let mut v = base.clone();
        v[key] = value;
        parse(v)
    };
    let without = |key: &str| {
        let mut v = base.clone();
        v.as_object_mut().unwrap().remove(key);
        parse(v)
    };
    let cases: Vec<(Result<Signal, SignalError>, SignalError)> = vec![
        (
            with("specversion", json!("0.3")),
            SignalError::UnsupportedSpecVersion("0.3".into()),
        ),
        (
            without("specversion"),
            SignalError::MissingAttribute("specversion"),
        ),
        (without("id"), SignalError::MissingAttribute("id")),
        (without("source"), SignalError::MissingAttribute("source")),
        (without("type"), SignalError::MissingAttribute("type")),
        (with("id", json!(null)), SignalError::MissingAttribute("id")),
        (with("id", json!("")), SignalError::EmptyAttribute("id")),
        (
            with("source", json!("")),
            SignalError::EmptyAttribute("source"),
        ),
        (with("type", json!("")), SignalError::EmptyAttribute("type")),
        (
            with("type", json!("a..b")),
            SignalError::EmptySegment {
                input: "a..b".into(),
                index: 1,
            },
        ),
        (
            with("type", json!("a.b c")),
            SignalError::InvalidCharacter {
                input: "a.b c".into(),
                found: ' ',
            },
        ),
        (
            with("id", json!(5)),
            SignalError::InvalidAttribute {
                name: "id".into(),
                reason: "expected a string, found 5".into(),
            },
        ),
        (
            with("Bad_Name", json!(1)),
            SignalError::InvalidExtensionName("Bad_Name".into()),
        ),
    ];
    for (got, want) in cases {
        assert_eq!(got.unwrap_err(), want);
    }

    let mut both = base.clone();
    both["data"] = json!(1);
    both["data_base64"] = json!("AA==");
    assert_eq!(parse(both).unwrap_err(), SignalError::ConflictingData);

    assert!(matches!(
        with("data_base64", json!("not base64!")),
        Err(SignalError::InvalidAttribute { name, .. }) if name == "data_base64"
    ));
    assert!(matches!(
        with("time", json!("yesterday")),
        Err(SignalError::InvalidAttribute { name, .. }) if name == "time"
    ));
    assert!(matches!(
        Signal::from_json("[1]"),
        Err(SignalError::Json(_))
    ));
    assert!(matches!(Signal::from_json("{"), Err(SignalError::Json(_))));
    // serde's Deserialize reports the same typed failure as text.
    let err = serde_json::from_value::<Signal>(with_spec("0.3")).unwrap_err();
    assert!(
        err.to_string().contains("unsupported specversion `0.3`"),
        "{err}"
    );
}

fn with_spec(spec: &str) -> Value {
    json!({"specversion": spec, "id": "1", "source": "/s", "type": "a.b"})
}

#[test]
fn data_as_reports_a_mismatch_with_the_requested_type() {
    let signal = Signal::builder("a.b", "s")
        .with_data(json!({"text": 5}))
        .build()
        .unwrap();
    match signal.data_as::<Input>() {
        Err(SignalError::DataMismatch { expected, reason }) => {
            assert!(expected.ends_with("Input"), "{expected}");
            assert!(reason.contains("invalid type"), "{reason}");
        }
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

#[test]
fn builder_rejects_bad_input() {
    assert_eq!(
        Signal::builder("", "s").build().unwrap_err(),
        SignalError::EmptyType
    );
    assert_eq!(
        Signal::builder("a.", "s").build().unwrap_err(),
        SignalError::EmptySegment {
            input: "a.".into(),
            index: 1
        }
    );
    assert_eq!(
        Signal::builder("a.b", "").build().unwrap_err(),
        SignalError::EmptyAttribute("source")
    );
    assert_eq!(
        Signal::builder("a.b", "s").with_id("").build().unwrap_err(),
        SignalError::EmptyAttribute("id")
    );
    assert_eq!(
        Signal::builder("a.b", "s")
            .with_extension("trace_id", 1)
            .build()
            .unwrap_err(),
        SignalError::InvalidExtensionName("trace_id".into())
    );
    assert_eq!(
        Signal::builder("a.b", "s")
            .with_extension("threadid", "x")
            .build()
            .unwrap_err(),
        SignalError::ReservedExtensionName("threadid".into())
    );
    assert_eq!(
        Signal::builder("a.*", "s").build().unwrap_err(),
        SignalError::InvalidCharacter {
            input: "a.*".into(),
            found: '*'
        }
    );
}

/// An envelope from elsewhere: the spec's required attributes and `extra`.
fn foreign(extra: Value) -> Value {
    let mut envelope = json!({
        "specversion": "1.0",
        "id": "A234-1234-1234",
        "source": "https://github.com/cloudevents/spec/pull",
        "type": "com.github.pull_request.opened",
    });
    if let (Some(map), Value::Object(extra)) = (envelope.as_object_mut(), extra) {
        map.extend(extra);
    }
    envelope
}

#[test]
fn cloudevents_1_0_2_as_written_at_the_edge() {
    // Each refused with an error naming the attribute.
    let refused = [
        (json!({"time": "2018-04-05T17:31Z"}), "time"),
        (json!({"time": "2018-04-05 17:31:00Z"}), "time"),
        (json!({"time": "2018-04-05T17:31:00+24:00"}), "time"),
        (json!({"time": "2018-04-05T17:31:00+0100"}), "time"),
        (json!({"time": "2018-02-30T17:31:00Z"}), "time"),
        (json!({"time": ""}), "time"),
        (json!({"datacontenttype": "json"}), "datacontenttype"),
        (
            json!({"datacontenttype": "text/plain; charset"}),
            "datacontenttype",
        ),
        (json!({"datacontenttype": ""}), "datacontenttype"),
        (json!({"dataschema": "schema.json"}), "dataschema"),
        (json!({"dataschema": ""}), "dataschema"),
        (json!({"subject": ""}), "subject"),
        (json!({"threadid": ""}), "threadid"),
        (json!({"source": "two words"}), "source"),
        (json!({"tenant": {"id": 1}}), "tenant"),
        (json!({"tenant": [1]}), "tenant"),
        (json!({"tenant": 1.5}), "tenant"),
        (json!({"tenant": 4_294_967_296u64}), "tenant"),
        (json!({"Tenant": "x"}), "Tenant"),
        (json!({"data": {}, "data_base64": "AA=="}), "data"),
    ];
    for (extra, attribute) in refused {
        let err = parse(foreign(extra.clone())).unwrap_err();
        let named = match &err {
            SignalError::InvalidAttribute { name, .. } => name.as_str(),
            SignalError::EmptyAttribute(name) => name,
            SignalError::InvalidExtensionName(name) => name.as_str(),
            SignalError::ConflictingData => "data",
            other => panic!("{extra}: {other:?}"),
        };
        assert_eq!(named, attribute, "{extra}: {err}");
    }
    // And what the spec allows is read.
    for extra in [
        json!({"time": "2018-04-05T17:31:00Z"}),
        json!({"time": "2018-04-05t17:31:00.5-07:00"}),
        json!({"time": "2016-12-31T23:59:60Z"}),
        json!({"datacontenttype": "text/xml; charset=\"utf-8\""}),
        json!({"dataschema": "urn:example:schema"}),
        json!({"tenant": "acme", "priority": 3, "urgent": true}),
        json!({"tracestate": ""}),
    ] {
        assert!(parse(foreign(extra.clone())).is_ok(), "{extra}");
    }
    // The builder never makes what the parser refuses.
    for (built, attribute) in [
        (
            Signal::builder("a.b", "s").with_subject("").build(),
            "subject",
        ),
        (
            Signal::builder("a.b", "s")
                .with_data_content_type("json")
                .build(),
            "datacontenttype",
        ),
        (
            Signal::builder("a.b", "s")
                .with_data_schema("schema.json")
                .build(),
            "dataschema",
        ),
        (
            Signal::builder("a.b", "s")
                .with_extension("tenant", json!({"id": 1}))
                .build(),
            "tenant",
        ),
    ] {
        let err = built.unwrap_err();
        let named = match &err {
            SignalError::InvalidAttribute { name, .. } => name.as_str(),
            SignalError::EmptyAttribute(name) => name,
            other => panic!("{other:?}"),
        };
        assert_eq!(named, attribute, "{err}");
    }
}
