//! The [`Signal`] envelope: CloudEvents 1.0 attributes plus motet's extensions, its builder and
//! its structured-mode JSON form.
//!
//! On the wire a signal is a CloudEvents 1.0 structured-mode JSON object. motet's extensions are
//! top-level attributes: `correlationid`, `causationid`, `threadid`, `requestid`, and the W3C
//! trace context `traceparent` / `tracestate`. Extensions motet does not know are kept verbatim,
//! so events from other CloudEvents SDKs survive a round trip through motet.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use jiff::Timestamp;
use serde::de::DeserializeOwned;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use crate::{SignalError, SignalType, cloudevents};

/// The CloudEvents version motet speaks.
pub const SPEC_VERSION: &str = "1.0";

/// Attribute names that are not extensions: the CloudEvents context attributes, the data
/// members and motet's typed extensions.
const RESERVED: &[&str] = &[
    "specversion",
    "id",
    "source",
    "type",
    "subject",
    "time",
    "datacontenttype",
    "dataschema",
    "data",
    "data_base64",
    "correlationid",
    "causationid",
    "threadid",
    "requestid",
    "traceparent",
    "tracestate",
];

/// A signal's id: any non-empty string on the wire; UUIDv7 (time-ordered) when motet makes one.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SignalId(String);

impl SignalId {
    /// A fresh UUIDv7 id from the system clock and random bits.
    ///
    /// Pure code that must replay deterministically should take ids from its environment and
    /// set them with [`SignalBuilder::with_id`] instead.
    pub fn now_v7() -> Self {
        Self(uuid::Uuid::now_v7().to_string())
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SignalId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<String> for SignalId {
    fn from(id: String) -> Self {
        Self(id)
    }
}

impl From<&str> for SignalId {
    fn from(id: &str) -> Self {
        Self(id.to_owned())
    }
}

impl From<uuid::Uuid> for SignalId {
    fn from(id: uuid::Uuid) -> Self {
        Self(id.to_string())
    }
}

/// A signal's payload.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum SignalData {
    /// No data.
    #[default]
    None,
    /// JSON data, carried in the `data` member (also used for a string payload of a non-JSON
    /// content type such as `text/xml`).
    Json(Value),
    /// Binary data, carried base64-encoded in the `data_base64` member.
    Binary(Vec<u8>),
}

impl SignalData {
    /// Whether there is no data.
    pub fn is_none(&self) -> bool {
        matches!(self, Self::None)
    }
}

/// The W3C trace context carried by a signal (`traceparent`, `tracestate`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TraceContext {
    /// The `traceparent` header value.
    pub traceparent: Option<String>,
    /// The `tracestate` header value.
    pub tracestate: Option<String>,
}

/// A CloudEvents 1.0 event with motet's extensions: the message every agent receives and emits.
///
/// Build one with [`Signal::builder`]; read it with the accessors; serialize it with serde (or
/// [`Signal::to_json`]) and parse one with [`Signal::from_json`], which reports every invalid
/// envelope as a [`SignalError`].
///
/// A signal is immutable once built and shares its envelope: cloning it (once per subscriber a
/// bus delivers it to) is one reference-count increment.
#[derive(Debug, Clone, PartialEq)]
pub struct Signal(Arc<Envelope>);

/// A signal's attributes; shared behind the [`Signal`]'s `Arc`.
#[derive(Debug, Clone, PartialEq)]
struct Envelope {
    id: SignalId,
    source: String,
    ty: SignalType,
    subject: Option<String>,
    time: Option<Timestamp>,
    data_content_type: Option<String>,
    data_schema: Option<String>,
    data: SignalData,
    correlation_id: Option<String>,
    causation_id: Option<SignalId>,
    thread_id: Option<String>,
    request_id: Option<String>,
    trace: TraceContext,
    extensions: BTreeMap<String, Value>,
}

impl Signal {
    /// Starts a signal of type `ty` from `source`, with a fresh UUIDv7 id and the current time.
    pub fn builder(ty: impl AsRef<str>, source: impl Into<String>) -> SignalBuilder {
        SignalBuilder::new(ty, source)
    }

    /// The `id` attribute.
    pub fn id(&self) -> &SignalId {
        &self.0.id
    }

    /// The `source` attribute (a URI-reference; motet uses agent names and paths).
    pub fn source(&self) -> &str {
        &self.0.source
    }

    /// The `type` attribute.
    pub fn signal_type(&self) -> &SignalType {
        &self.0.ty
    }

    /// The `subject` attribute.
    pub fn subject(&self) -> Option<&str> {
        self.0.subject.as_deref()
    }

    /// The `time` attribute.
    pub fn time(&self) -> Option<Timestamp> {
        self.0.time
    }

    /// The `datacontenttype` attribute.
    pub fn data_content_type(&self) -> Option<&str> {
        self.0.data_content_type.as_deref()
    }

    /// The `dataschema` attribute.
    pub fn data_schema(&self) -> Option<&str> {
        self.0.data_schema.as_deref()
    }

    /// The payload.
    pub fn data(&self) -> &SignalData {
        &self.0.data
    }

    /// The JSON payload deserialized as `T`.
    ///
    /// # Errors
    /// [`SignalError::NoData`] without data, [`SignalError::BinaryData`] for binary data, and
    /// [`SignalError::DataMismatch`] when the JSON is not a `T`.
    pub fn data_as<T: DeserializeOwned>(&self) -> Result<T, SignalError> {
        match &self.0.data {
            SignalData::None => Err(SignalError::NoData),
            SignalData::Binary(_) => Err(SignalError::BinaryData),
            SignalData::Json(value) => {
                T::deserialize(value).map_err(|e| SignalError::DataMismatch {
                    expected: std::any::type_name::<T>(),
                    reason: e.to_string(),
                })
            }
        }
    }

    /// The `correlationid` extension: the id shared by every signal of one conversation or job.
    pub fn correlation_id(&self) -> Option<&str> {
        self.0.correlation_id.as_deref()
    }

    /// The `causationid` extension: the id of the signal that caused this one.
    pub fn causation_id(&self) -> Option<&SignalId> {
        self.0.causation_id.as_ref()
    }

    /// The `threadid` extension: the conversation thread this signal belongs to.
    pub fn thread_id(&self) -> Option<&str> {
        self.0.thread_id.as_deref()
    }

    /// The `requestid` extension: the request this signal serves.
    pub fn request_id(&self) -> Option<&str> {
        self.0.request_id.as_deref()
    }

    /// The W3C trace context (`traceparent`, `tracestate` extensions).
    pub fn trace(&self) -> &TraceContext {
        &self.0.trace
    }

    /// An extension attribute motet has no typed field for.
    pub fn extension(&self, name: &str) -> Option<&Value> {
        self.0.extensions.get(name)
    }

    /// Every extension attribute motet has no typed field for, by name.
    pub fn extensions(&self) -> &BTreeMap<String, Value> {
        &self.0.extensions
    }

    /// This signal with its W3C trace context replaced (the `traceparent` and `tracestate`
    /// extensions): the runtime stamps the span a signal was emitted in.
    #[must_use]
    pub fn with_trace(mut self, trace: TraceContext) -> Self {
        Arc::make_mut(&mut self.0).trace = trace;
        self
    }

    /// Makes this signal a consequence of `cause`: see [`SignalBuilder::caused_by`].
    #[must_use]
    pub fn caused_by(mut self, cause: &Signal) -> Self {
        self.inherit(cause);
        self
    }

    /// A copy of this signal as one occurrence of it: the same type, source, data and context,
    /// with the id `id` and the time `time`. A repeating timer delivers one per firing, each
    /// with an id of its own that a redelivery of the same firing repeats.
    #[must_use]
    pub fn occurrence(&self, id: impl Into<SignalId>, time: Timestamp) -> Self {
        let mut copy = self.clone();
        let envelope = Arc::make_mut(&mut copy.0);
        envelope.id = id.into();
        envelope.time = Some(time);
        copy
    }

    fn inherit(&mut self, cause: &Signal) {
        let this = Arc::make_mut(&mut self.0);
        let cause = &cause.0;
        this.causation_id = Some(cause.id.clone());
        this.correlation_id = Some(
            cause
                .correlation_id
                .clone()
                .unwrap_or_else(|| cause.id.0.clone()),
        );
        this.thread_id.clone_from(&cause.thread_id);
        this.request_id.clone_from(&cause.request_id);
        this.trace = cause.trace.clone();
    }

    /// The structured-mode JSON text.
    ///
    /// # Errors
    /// [`SignalError::Json`] if serialization fails (it does not for values motet builds).
    pub fn to_json(&self) -> Result<String, SignalError> {
        serde_json::to_string(self).map_err(|e| SignalError::Json(e.to_string()))
    }

    /// Parses structured-mode JSON text, validating the envelope.
    ///
    /// # Errors
    /// [`SignalError::Json`] for text that is not a JSON object; otherwise as
    /// [`Signal::from_json_value`].
    pub fn from_json(text: &str) -> Result<Self, SignalError> {
        let value: Value =
            serde_json::from_str(text).map_err(|e| SignalError::Json(e.to_string()))?;
        Self::from_json_value(value)
    }

    /// Reads a structured-mode JSON object, validating the envelope.
    ///
    /// A `null` attribute counts as absent, as the CloudEvents JSON format says.
    ///
    /// # Errors
    /// [`SignalError::UnsupportedSpecVersion`], [`SignalError::MissingAttribute`],
    /// [`SignalError::EmptyAttribute`], type errors from [`SignalType::new`],
    /// [`SignalError::InvalidAttribute`], [`SignalError::ConflictingData`] and
    /// [`SignalError::InvalidExtensionName`].
    pub fn from_json_value(value: Value) -> Result<Self, SignalError> {
        let Value::Object(mut map) = value else {
            return Err(SignalError::Json("expected a json object".to_owned()));
        };
        let spec = required(&mut map, "specversion")?;
        if spec != SPEC_VERSION {
            return Err(SignalError::UnsupportedSpecVersion(spec));
        }
        let id = required(&mut map, "id")?;
        let source = required(&mut map, "source")?;
        cloudevents::uri_reference("source", &source)?;
        let ty = SignalType::new(required(&mut map, "type")?)?;
        let time = present(&mut map, "time")?
            .map(|text| cloudevents::time(&text))
            .transpose()?;
        let data_content_type = present(&mut map, "datacontenttype")?;
        if let Some(media) = &data_content_type {
            cloudevents::media_type(media)?;
        }
        let data_schema = present(&mut map, "dataschema")?;
        if let Some(schema) = &data_schema {
            cloudevents::uri("dataschema", schema)?;
        }
        let data = match (take(&mut map, "data"), take(&mut map, "data_base64")) {
            (Some(_), Some(_)) => return Err(SignalError::ConflictingData),
            (Some(json), None) => SignalData::Json(json),
            (None, Some(Value::String(encoded))) => {
                SignalData::Binary(BASE64.decode(encoded.as_bytes()).map_err(|e| {
                    SignalError::InvalidAttribute {
                        name: "data_base64".to_owned(),
                        reason: e.to_string(),
                    }
                })?)
            }
            (None, Some(_)) => {
                return Err(SignalError::InvalidAttribute {
                    name: "data_base64".to_owned(),
                    reason: "expected a string".to_owned(),
                });
            }
            (None, None) => SignalData::None,
        };
        let signal = Envelope {
            id: SignalId(id),
            source,
            ty,
            subject: present(&mut map, "subject")?,
            time,
            data_content_type,
            data_schema,
            data,
            correlation_id: present(&mut map, "correlationid")?,
            causation_id: present(&mut map, "causationid")?.map(SignalId),
            thread_id: present(&mut map, "threadid")?,
            request_id: present(&mut map, "requestid")?,
            trace: TraceContext {
                traceparent: present(&mut map, "traceparent")?,
                // W3C trace context allows an empty `tracestate`: it says nothing.
                tracestate: optional(&mut map, "tracestate")?.filter(|s| !s.is_empty()),
            },
            extensions: BTreeMap::new(),
        };
        let mut extensions = BTreeMap::new();
        for (name, value) in map {
            check_extension_name(&name)?;
            if !value.is_null() {
                cloudevents::extension_value(&name, &value)?;
                extensions.insert(name, value);
            }
        }
        Ok(Self(Arc::new(Envelope {
            extensions,
            ..signal
        })))
    }
}

/// Removes `name`, treating `null` as absent.
fn take(map: &mut Map<String, Value>, name: &str) -> Option<Value> {
    map.remove(name).filter(|v| !v.is_null())
}

/// Removes an optional string attribute.
fn optional(map: &mut Map<String, Value>, name: &str) -> Result<Option<String>, SignalError> {
    match take(map, name) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(other) => Err(SignalError::InvalidAttribute {
            name: name.to_owned(),
            reason: format!("expected a string, found {other}"),
        }),
    }
}

/// Removes an optional string attribute that must not be empty when present.
fn present(
    map: &mut Map<String, Value>,
    name: &'static str,
) -> Result<Option<String>, SignalError> {
    match optional(map, name)? {
        Some(text) if text.is_empty() => Err(SignalError::EmptyAttribute(name)),
        other => Ok(other),
    }
}

/// Removes a required, non-empty string attribute.
fn required(map: &mut Map<String, Value>, name: &'static str) -> Result<String, SignalError> {
    match optional(map, name)? {
        None => Err(SignalError::MissingAttribute(name)),
        Some(text) if text.is_empty() => Err(SignalError::EmptyAttribute(name)),
        Some(text) => Ok(text),
    }
}

/// CloudEvents extension names: lowercase ASCII letters and digits, not a reserved attribute.
fn check_extension_name(name: &str) -> Result<(), SignalError> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return Err(SignalError::InvalidExtensionName(name.to_owned()));
    }
    Ok(())
}

impl Serialize for Signal {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("specversion", SPEC_VERSION)?;
        map.serialize_entry("id", &self.0.id)?;
        map.serialize_entry("source", &self.0.source)?;
        map.serialize_entry("type", &self.0.ty)?;
        let put = |map: &mut S::SerializeMap, name: &str, value: Option<&str>| match value {
            Some(value) => map.serialize_entry(name, value),
            None => Ok(()),
        };
        put(&mut map, "subject", self.0.subject.as_deref())?;
        if let Some(time) = &self.0.time {
            map.serialize_entry("time", time)?;
        }
        put(
            &mut map,
            "datacontenttype",
            self.0.data_content_type.as_deref(),
        )?;
        put(&mut map, "dataschema", self.0.data_schema.as_deref())?;
        put(&mut map, "correlationid", self.0.correlation_id.as_deref())?;
        put(
            &mut map,
            "causationid",
            self.0.causation_id.as_ref().map(SignalId::as_str),
        )?;
        put(&mut map, "threadid", self.0.thread_id.as_deref())?;
        put(&mut map, "requestid", self.0.request_id.as_deref())?;
        put(&mut map, "traceparent", self.0.trace.traceparent.as_deref())?;
        put(&mut map, "tracestate", self.0.trace.tracestate.as_deref())?;
        for (name, value) in &self.0.extensions {
            map.serialize_entry(name, value)?;
        }
        match &self.0.data {
            SignalData::None => {}
            SignalData::Json(value) => map.serialize_entry("data", value)?,
            SignalData::Binary(bytes) => {
                map.serialize_entry("data_base64", &BASE64.encode(bytes))?
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Signal {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Self::from_json_value(value).map_err(serde::de::Error::custom)
    }
}

/// Builds a [`Signal`]; every setter is infallible and [`SignalBuilder::build`] reports the
/// first problem.
#[derive(Debug, Clone)]
#[must_use]
pub struct SignalBuilder {
    ty: Result<SignalType, SignalError>,
    error: Option<SignalError>,
    signal_id: Option<SignalId>,
    time: Option<Timestamp>,
    time_set: bool,
    source: String,
    subject: Option<String>,
    data_content_type: Option<String>,
    data_schema: Option<String>,
    data: SignalData,
    correlation_id: Option<String>,
    causation_id: Option<SignalId>,
    thread_id: Option<String>,
    request_id: Option<String>,
    trace: TraceContext,
    extensions: BTreeMap<String, Value>,
}

impl SignalBuilder {
    /// Starts a signal of type `ty` from `source`.
    pub fn new(ty: impl AsRef<str>, source: impl Into<String>) -> Self {
        Self {
            ty: SignalType::new(ty),
            error: None,
            signal_id: None,
            time: None,
            time_set: false,
            source: source.into(),
            subject: None,
            data_content_type: None,
            data_schema: None,
            data: SignalData::None,
            correlation_id: None,
            causation_id: None,
            thread_id: None,
            request_id: None,
            trace: TraceContext::default(),
            extensions: BTreeMap::new(),
        }
    }

    fn fail(&mut self, error: SignalError) {
        self.error.get_or_insert(error);
    }

    /// Uses `id` instead of a fresh UUIDv7.
    pub fn with_id(mut self, id: impl Into<SignalId>) -> Self {
        self.signal_id = Some(id.into());
        self
    }

    /// Sets the `time` attribute (by default the current time); `None` leaves it out.
    pub fn with_time(mut self, time: Option<Timestamp>) -> Self {
        self.time = time;
        self.time_set = true;
        self
    }

    /// Sets the `subject` attribute.
    pub fn with_subject(mut self, subject: impl Into<String>) -> Self {
        self.subject = Some(subject.into());
        self
    }

    /// Serializes `data` to JSON as the payload; content type `application/json` unless set.
    pub fn with_data<T: Serialize>(mut self, data: T) -> Self {
        match serde_json::to_value(data) {
            Ok(value) => self = self.with_json_data(value),
            Err(e) => self.fail(SignalError::DataSerialize(e.to_string())),
        }
        self
    }

    /// Uses `value` as the JSON payload; content type `application/json` unless set.
    pub fn with_json_data(mut self, value: Value) -> Self {
        self.data = SignalData::Json(value);
        self.data_content_type
            .get_or_insert_with(|| "application/json".to_owned());
        self
    }

    /// Uses `bytes` as the payload (sent as `data_base64`) with the given content type.
    pub fn with_binary_data(
        mut self,
        bytes: impl Into<Vec<u8>>,
        content_type: impl Into<String>,
    ) -> Self {
        self.data = SignalData::Binary(bytes.into());
        self.data_content_type = Some(content_type.into());
        self
    }

    /// Sets the `datacontenttype` attribute.
    pub fn with_data_content_type(mut self, content_type: impl Into<String>) -> Self {
        self.data_content_type = Some(content_type.into());
        self
    }

    /// Sets the `dataschema` attribute.
    pub fn with_data_schema(mut self, schema: impl Into<String>) -> Self {
        self.data_schema = Some(schema.into());
        self
    }

    /// Sets the `correlationid` extension.
    pub fn with_correlation_id(mut self, id: impl Into<String>) -> Self {
        self.correlation_id = Some(id.into());
        self
    }

    /// Sets the `causationid` extension.
    pub fn with_causation_id(mut self, id: impl Into<SignalId>) -> Self {
        self.causation_id = Some(id.into());
        self
    }

    /// Sets the `threadid` extension.
    pub fn with_thread_id(mut self, id: impl Into<String>) -> Self {
        self.thread_id = Some(id.into());
        self
    }

    /// Sets the `requestid` extension.
    pub fn with_request_id(mut self, id: impl Into<String>) -> Self {
        self.request_id = Some(id.into());
        self
    }

    /// Sets the W3C trace context (`traceparent`, `tracestate` extensions).
    pub fn with_trace(mut self, trace: TraceContext) -> Self {
        self.trace = trace;
        self
    }

    /// Adds an extension attribute motet has no typed setter for.
    ///
    /// The name must be lowercase ASCII letters and digits and not a context attribute or a
    /// typed extension; otherwise [`SignalBuilder::build`] fails.
    pub fn with_extension(mut self, name: impl Into<String>, value: impl Into<Value>) -> Self {
        let name = name.into();
        if let Err(e) = check_extension_name(&name) {
            self.fail(e);
        } else if RESERVED.contains(&name.as_str()) {
            self.fail(SignalError::ReservedExtensionName(name));
        } else {
            let value = value.into();
            match cloudevents::extension_value(&name, &value) {
                Ok(()) => {
                    self.extensions.insert(name, value);
                }
                Err(e) => self.fail(e),
            }
        }
        self
    }

    /// Makes the signal a consequence of `cause`: causation id = `cause`'s id; correlation id =
    /// `cause`'s correlation id, or its id when it has none; thread id, request id and trace
    /// context copied from `cause`.
    pub fn caused_by(mut self, cause: &Signal) -> Self {
        self.causation_id = Some(cause.0.id.clone());
        self.correlation_id = Some(
            cause
                .0
                .correlation_id
                .clone()
                .unwrap_or_else(|| cause.0.id.0.clone()),
        );
        self.thread_id.clone_from(&cause.0.thread_id);
        self.request_id.clone_from(&cause.0.request_id);
        self.trace = cause.0.trace.clone();
        self
    }

    /// The signal.
    ///
    /// # Errors
    /// The type's validation error, [`SignalError::EmptyAttribute`] for an empty source or id,
    /// or the first error a setter recorded.
    pub fn build(self) -> Result<Signal, SignalError> {
        let ty = self.ty?;
        if let Some(error) = self.error {
            return Err(error);
        }
        if self.source.is_empty() {
            return Err(SignalError::EmptyAttribute("source"));
        }
        let id = self.signal_id.unwrap_or_else(SignalId::now_v7);
        if id.0.is_empty() {
            return Err(SignalError::EmptyAttribute("id"));
        }
        // What the envelope parser refuses is never built: a signal motet writes reads back.
        if self.subject.as_deref() == Some("") {
            return Err(SignalError::EmptyAttribute("subject"));
        }
        if let Some(media) = &self.data_content_type {
            cloudevents::media_type(media)?;
        }
        if let Some(schema) = &self.data_schema {
            cloudevents::uri("dataschema", schema)?;
        }
        Ok(Signal(Arc::new(Envelope {
            id,
            source: self.source,
            ty,
            subject: self.subject,
            time: if self.time_set {
                self.time
            } else {
                Some(Timestamp::now())
            },
            data_content_type: self.data_content_type,
            data_schema: self.data_schema,
            data: self.data,
            correlation_id: self.correlation_id,
            causation_id: self.causation_id,
            thread_id: self.thread_id,
            request_id: self.request_id,
            trace: self.trace,
            extensions: self.extensions,
        })))
    }
}
