//! The built-in `calculator` tool: evaluates an arithmetic expression.
//!
//! Numbers (`2`, `3.5`, `1e3`), `+ - * / %`, `^` (power, right-associative), parentheses,
//! unary minus and the functions `sqrt`, `abs`, `ln`, `exp`, `floor`, `ceil`, `round`. A
//! recursive-descent parser over the characters: no variables, no side effects, so the tool is
//! idempotent (a resumed thread may run it again).

use motet::runtime::tool::{Tool, ToolError, tool_fn};
use schemars::JsonSchema;
use serde::Deserialize;

/// The tool's name.
pub const NAME: &str = "calculator";

/// Arguments of the calculator tool.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct CalculatorArgs {
    /// An arithmetic expression, for example `(2 + 3) * 4 ^ 2`.
    // The pattern says which characters an expression is made of. Servers that constrain
    // tool arguments by the schema (llama.cpp) then keep a small model to arithmetic: without
    // it SmolLM2-135M fills the string with comments until it runs out of tokens.
    #[schemars(regex(pattern = r"^[-(0-9a-z][-+*/%^(). 0-9a-z]*$"))]
    pub expression: String,
}

/// The calculator as a tool.
pub fn tool() -> impl Tool {
    tool_fn(
        NAME,
        "Evaluates an arithmetic expression: numbers, + - * / % ^, parentheses, \
         sqrt abs ln exp floor ceil round. Returns the number.",
        |args: CalculatorArgs| {
            std::future::ready(
                evaluate(&args.expression)
                    .map(format_number)
                    .map_err(|e| ToolError::invalid_args(e.to_string())),
            )
        },
    )
    .with_idempotent(true)
}

/// Why an expression has no value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CalcError {
    /// A character or token where it cannot be.
    #[error("unexpected `{found}` at position {at}")]
    Unexpected {
        /// What was found (`end of input` at the end).
        found: String,
        /// Character offset.
        at: usize,
    },
    /// A function the calculator does not know.
    #[error("unknown function `{0}`")]
    UnknownFunction(String),
    /// A division or remainder by zero.
    #[error("division by zero")]
    DivisionByZero,
    /// The result is not a finite number (overflow, square root of a negative number).
    #[error("the result is not a finite number")]
    NotFinite,
    /// Parentheses, signs or powers nested deeper than the calculator follows.
    #[error("nested deeper than {max} levels (parentheses, signs or powers)")]
    TooDeep {
        /// The deepest nesting evaluated.
        max: usize,
    },
}

/// The deepest nesting of parentheses (a function's included), unary signs and powers
/// evaluated: 100 levels evaluate, 101 are [`CalcError::TooDeep`]. The parser recurses
/// once per level: without a bound, 10,000 parentheses from a model overflowed the stack and
/// aborted the whole process (and again on every resume).
pub const MAX_NESTING: usize = 100;

/// The value of `expression`.
///
/// # Errors
/// [`CalcError`] when it does not parse or has no finite value.
pub fn evaluate(expression: &str) -> Result<f64, CalcError> {
    let mut parser = Parser {
        chars: expression.chars().collect(),
        at: 0,
        depth: 0,
    };
    let value = parser.sum()?;
    parser.skip_space();
    if let Some(&c) = parser.chars.get(parser.at) {
        return Err(parser.unexpected(c.to_string()));
    }
    if value.is_finite() {
        Ok(value)
    } else {
        Err(CalcError::NotFinite)
    }
}

/// Whole numbers without a fraction, others as Rust prints them.
pub fn format_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        value.to_string()
    }
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    /// Levels of `unary` entered and not yet left: every recursion passes through it.
    depth: usize,
}

impl Parser {
    fn skip_space(&mut self) {
        while self.chars.get(self.at).is_some_and(|c| c.is_whitespace()) {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_space();
        self.chars.get(self.at).copied()
    }

    fn unexpected(&self, found: String) -> CalcError {
        CalcError::Unexpected { found, at: self.at }
    }

    fn end_or(&self, c: Option<char>) -> CalcError {
        self.unexpected(c.map_or_else(|| "end of input".to_owned(), |c| c.to_string()))
    }

    /// sum := product (('+' | '-') product)*
    fn sum(&mut self) -> Result<f64, CalcError> {
        let mut value = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.at += 1;
            let rhs = self.product()?;
            value = if op == '+' { value + rhs } else { value - rhs };
        }
        Ok(value)
    }

    /// product := unary (('*' | '/' | '%') unary)*
    fn product(&mut self) -> Result<f64, CalcError> {
        let mut value = self.unary()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek() {
            self.at += 1;
            let rhs = self.unary()?;
            value = match op {
                '*' => value * rhs,
                _ if rhs == 0.0 => return Err(CalcError::DivisionByZero),
                '/' => value / rhs,
                _ => value % rhs,
            };
        }
        Ok(value)
    }

    /// unary := ('-' | '+') unary | power
    fn unary(&mut self) -> Result<f64, CalcError> {
        // The expression itself is the first `unary` entered, so `depth` here is the nesting
        // of the level being entered: `1` is 0 deep, `(1)` and `-1` are 1 deep.
        if self.depth > MAX_NESTING {
            return Err(CalcError::TooDeep { max: MAX_NESTING });
        }
        self.depth += 1;
        let value = self.signed();
        self.depth -= 1;
        value
    }

    fn signed(&mut self) -> Result<f64, CalcError> {
        match self.peek() {
            Some('-') => {
                self.at += 1;
                Ok(-self.unary()?)
            }
            Some('+') => {
                self.at += 1;
                self.unary()
            }
            _ => self.power(),
        }
    }

    /// power := atom ('^' unary)?   (right-associative; `-2^2` is -4, `2^-1` is 0.5)
    fn power(&mut self) -> Result<f64, CalcError> {
        let base = self.atom()?;
        if self.peek() == Some('^') {
            self.at += 1;
            let exponent = self.unary()?;
            return Ok(base.powf(exponent));
        }
        Ok(base)
    }

    /// atom := number | '(' sum ')' | name '(' sum ')'
    fn atom(&mut self) -> Result<f64, CalcError> {
        match self.peek() {
            Some('(') => {
                self.at += 1;
                let value = self.sum()?;
                self.expect(')')?;
                Ok(value)
            }
            Some(c) if c.is_ascii_digit() || c == '.' => self.number(),
            Some(c) if c.is_ascii_alphabetic() => {
                let start = self.at;
                while self
                    .chars
                    .get(self.at)
                    .is_some_and(char::is_ascii_alphanumeric)
                {
                    self.at += 1;
                }
                let name: String = self.chars[start..self.at].iter().collect();
                let apply: fn(f64) -> f64 = match name.as_str() {
                    "sqrt" => f64::sqrt,
                    "abs" => f64::abs,
                    "ln" => f64::ln,
                    "exp" => f64::exp,
                    "floor" => f64::floor,
                    "ceil" => f64::ceil,
                    "round" => f64::round,
                    _ => return Err(CalcError::UnknownFunction(name)),
                };
                self.expect('(')?;
                let value = self.sum()?;
                self.expect(')')?;
                Ok(apply(value))
            }
            other => Err(self.end_or(other)),
        }
    }

    fn expect(&mut self, wanted: char) -> Result<(), CalcError> {
        match self.peek() {
            Some(c) if c == wanted => {
                self.at += 1;
                Ok(())
            }
            other => Err(self.end_or(other)),
        }
    }

    fn number(&mut self) -> Result<f64, CalcError> {
        let start = self.at;
        let digits = |p: &mut Self| {
            while p
                .chars
                .get(p.at)
                .is_some_and(|c| c.is_ascii_digit() || *c == '.')
            {
                p.at += 1;
            }
        };
        digits(self);
        if matches!(self.chars.get(self.at), Some('e' | 'E')) {
            let mark = self.at;
            self.at += 1;
            if matches!(self.chars.get(self.at), Some('+' | '-')) {
                self.at += 1;
            }
            if self.chars.get(self.at).is_some_and(char::is_ascii_digit) {
                digits(self);
            } else {
                self.at = mark;
            }
        }
        let text: String = self.chars[start..self.at].iter().collect();
        text.parse::<f64>().map_err(|_| CalcError::Unexpected {
            found: text.clone(),
            at: start,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        let deep =
            |open: &str, close: &str, n: usize| format!("{}1{}", open.repeat(n), close.repeat(n));
        let too_deep = CalcError::TooDeep { max: MAX_NESTING };
        for expression in [
            deep("(", ")", 10_000),
            deep("-", "", 20_000),
            deep("sqrt(", ")", 10_000),
            format!("2{}", "^2".repeat(10_000)),
            deep("(", ")", MAX_NESTING + 1),
        ] {
            assert_eq!(
                evaluate(&expression),
                Err(too_deep.clone()),
                "{}",
                &expression[..20]
            );
        }
        // Just inside the bound still evaluates.
        assert_eq!(evaluate(&deep("(", ")", MAX_NESTING - 1)), Ok(1.0));
        assert_eq!(evaluate(&deep("-", "", 98)), Ok(1.0));
    }

    #[test]
    fn exactly_max_nesting_levels_evaluate_and_one_more_is_refused() {
        let deep =
            |open: &str, close: &str, n: usize| format!("{}1{}", open.repeat(n), close.repeat(n));
        let too_deep = Err(CalcError::TooDeep { max: MAX_NESTING });
        assert_eq!(MAX_NESTING, 100, "docs/cli.md says 100");
        for (open, close, value) in [("(", ")", 1.0), ("sqrt(", ")", 1.0), ("-", "", 1.0)] {
            assert_eq!(
                evaluate(&deep(open, close, MAX_NESTING)),
                Ok(value),
                "{open}"
            );
            assert_eq!(
                evaluate(&deep(open, close, MAX_NESTING + 1)),
                too_deep,
                "{open}"
            );
        }
        let powers = |n: usize| format!("1{}", "^1".repeat(n));
        assert_eq!(evaluate(&powers(MAX_NESTING)), Ok(1.0));
        assert_eq!(evaluate(&powers(MAX_NESTING + 1)), too_deep);
        assert_eq!(
            too_deep.map_err(|e| e.to_string()),
            Err("nested deeper than 100 levels (parentheses, signs or powers)".to_owned())
        );
    }

    #[test]
    fn the_schema_keeps_expressions_to_arithmetic() {
        let schema = tool().parameters();
        let pattern = schema["properties"]["expression"]["pattern"]
            .as_str()
            .unwrap_or_default();
        assert!(
            pattern.starts_with('^') && pattern.ends_with('$'),
            "{schema}"
        );
        // Every character the evaluator reads is allowed; the comment a small model writes
        // instead of an expression is not.
        for c in ".+-*/%^() ".chars() {
            assert!(pattern.contains(c), "{c:?} missing from {pattern}");
        }
        assert!(
            pattern.contains("0-9a-z"),
            "digits and function names: {pattern}"
        );
        assert!(
            !pattern.contains('#') && !pattern.contains('}'),
            "{pattern}"
        );
    }

    #[test]
    fn evaluates_by_precedence() {
        let cases = [
            ("2 + 3", 5.0),
            ("2 + 3 * 4", 14.0),
            ("(2 + 3) * 4", 20.0),
            ("2 ^ 3 ^ 2", 512.0),
            ("-2 ^ 2", -4.0),
            ("2 ^ -1", 0.5),
            ("10 % 4", 2.0),
            ("7 / 2", 3.5),
            ("sqrt(16) + abs(-3)", 7.0),
            ("1e3 + 1.5E-1", 1000.15),
            ("--3", 3.0),
            ("round(2.6) - floor(2.6) + ceil(0.2)", 2.0),
        ];
        for (expression, expected) in cases {
            let got = evaluate(expression).unwrap();
            assert!((got - expected).abs() < 1e-9, "{expression}: {got}");
        }
    }

    #[test]
    fn refuses_what_has_no_value() {
        assert_eq!(evaluate("1 / 0"), Err(CalcError::DivisionByZero));
        assert_eq!(evaluate("5 % 0"), Err(CalcError::DivisionByZero));
        assert_eq!(evaluate("sqrt(-1)"), Err(CalcError::NotFinite));
        assert_eq!(
            evaluate("cos(1)"),
            Err(CalcError::UnknownFunction("cos".into()))
        );
        assert_eq!(
            evaluate("2 +"),
            Err(CalcError::Unexpected {
                found: "end of input".into(),
                at: 3
            })
        );
        assert_eq!(
            evaluate("(1 + 2"),
            Err(CalcError::Unexpected {
                found: "end of input".into(),
                at: 6
            })
        );
        assert_eq!(
            evaluate("2 $ 3"),
            Err(CalcError::Unexpected {
                found: "$".into(),
                at: 2
            })
        );
        assert!(evaluate("1..2").is_err());
    }

    #[test]
    fn prints_whole_numbers_without_a_fraction() {
        assert_eq!(format_number(14.0), "14");
        assert_eq!(format_number(-4.0), "-4");
        assert_eq!(format_number(0.5), "0.5");
    }
}
