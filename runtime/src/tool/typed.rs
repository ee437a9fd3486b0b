//! Tools whose arguments are a Rust type: the schema is derived, the arguments parsed for you.

use std::future::Future;
use std::marker::PhantomData;

use async_trait::async_trait;
use motet_directives::ToolArgs;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;

use super::{Tool, ToolContext, ToolError};

/// The JSON schema of `A` as tools offer it: JSON Schema 2020-12 without the `$schema` key and
/// with subschemas inlined (several providers do not resolve `$ref`; recursive types keep
/// theirs).
pub fn schema_for<A: JsonSchema>() -> serde_json::Value {
    SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.meta_schema = None;
            settings.inline_subschemas = true;
        })
        .into_generator()
        .into_root_schema_for::<A>()
        .to_value()
}

/// A tool made of a name, a description and an async function of typed arguments.
///
/// Built with [`tool_fn`]. The schema is derived once, at construction; each call parses the
/// raw arguments into `A` and reports a mismatch as [`ToolError::InvalidArgs`] with serde's
/// message, so the model can correct itself.
pub struct TypedTool<A, F> {
    name: String,
    description: String,
    parameters: serde_json::Value,
    idempotent: bool,
    handler: F,
    _args: PhantomData<fn(A)>,
}

/// A [`TypedTool`] from a function of its arguments.
///
/// ```
/// use motet_runtime::tool::{ToolError, tool_fn};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// /// Two numbers to add.
/// #[derive(Deserialize, JsonSchema)]
/// struct AddArgs {
///     a: f64,
///     b: f64,
/// }
///
/// let add = tool_fn("add", "Adds two numbers.", |args: AddArgs| async move {
///     Ok::<_, ToolError>((args.a + args.b).to_string())
/// })
/// .with_idempotent(true);
/// # let _ = add;
/// ```
pub fn tool_fn<A, F, Fut>(
    name: impl Into<String>,
    description: impl Into<String>,
    handler: F,
) -> TypedTool<A, F>
where
    A: DeserializeOwned + JsonSchema,
    F: Fn(A) -> Fut,
    Fut: Future<Output = Result<String, ToolError>>,
{
    TypedTool {
        name: name.into(),
        description: description.into(),
        parameters: schema_for::<A>(),
        idempotent: false,
        handler,
        _args: PhantomData,
    }
}

impl<A, F> TypedTool<A, F> {
    /// Declares whether calling the tool twice with the same arguments is harmless (a crashed
    /// agent re-runs only idempotent calls). Default: not idempotent.
    pub fn with_idempotent(mut self, idempotent: bool) -> Self {
        self.idempotent = idempotent;
        self
    }
}

impl<A, F> std::fmt::Debug for TypedTool<A, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedTool")
            .field("name", &self.name)
            .field("idempotent", &self.idempotent)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl<A, F, Fut> Tool for TypedTool<A, F>
where
    A: DeserializeOwned + 'static,
    F: Fn(A) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, ToolError>> + Send,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> serde_json::Value {
        self.parameters.clone()
    }

    fn idempotent(&self) -> bool {
        self.idempotent
    }

    async fn call(&self, args: &ToolArgs, _ctx: &ToolContext) -> Result<String, ToolError> {
        let parsed: A = args
            .parse()
            .map_err(|e| ToolError::invalid_args(invalid_args_message(&e)))?;
        (self.handler)(parsed).await
    }
}

/// The parser's message alone, without the directive error's own prefix.
fn invalid_args_message(error: &motet_directives::DirectiveError) -> String {
    match error {
        motet_directives::DirectiveError::InvalidArgs { message } => message.clone(),
        other => other.to_string(),
    }
}
