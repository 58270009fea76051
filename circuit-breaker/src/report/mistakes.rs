//! A mistake of the model's own (B8, B14): a name that is no tool, arguments that do not fit,
//! a call the tool rejected as the caller's. Answered with what to do, never charged.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::model::failure::FailureCategory;

/// A mistake of the model's own: never charged to a tool or the budget (B8).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mistake", rename_all = "snake_case")]
pub enum ModelMistake {
    /// The name is no tool of this agent.
    UnknownTool {
        /// The name the model sent.
        name: String,
        /// The closest offered name, if one is near.
        suggestion: Option<String>,
        /// The tools the model may call now.
        offered: Vec<String>,
    },
    /// The arguments do not fit the tool's schema.
    BadArguments {
        /// The tool.
        tool: String,
        /// What the decoder said.
        message: String,
    },
    /// The tool ran and answered that the call was the caller's mistake (B14): a resource
    /// the call named does not exist, or the input is one the tool does not accept.
    Rejected {
        /// The tool.
        tool: String,
        /// The tool's own message.
        message: String,
        /// Its category: [`NotFound`](FailureCategory::NotFound) for a missing resource,
        /// usually [`InvalidInput`](FailureCategory::InvalidInput) otherwise.
        category: FailureCategory,
    },
}

impl ModelMistake {
    /// What is wrong, without what to do next: the text once every call is paused, when the
    /// advice to call again would be an action nobody can take (B15).
    #[cfg(feature = "json")]
    pub(crate) fn fact(&self) -> String {
        match self {
            ModelMistake::UnknownTool { name, .. } => {
                format!("There is no tool named \"{}\".", clip(name))
            }
            ModelMistake::BadArguments { tool, message } => format!(
                "The arguments for {tool} do not fit its schema: {}. Nothing was called.",
                clip(message)
            ),
            ModelMistake::Rejected { tool, message, .. } => format!(
                "{tool} rejected the call: {}. This is a problem with the call, not the tool.",
                clip(message).trim_end_matches(['.', ' '])
            ),
        }
    }
}

impl fmt::Display for ModelMistake {
    /// The text for the model: what is wrong, and what to do.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelMistake::UnknownTool {
                name,
                suggestion,
                offered,
            } => {
                write!(f, "There is no tool named \"{}\".", clip(name))?;
                if let Some(s) = suggestion {
                    write!(f, " Did you mean \"{s}\"?")?;
                }
                if offered.is_empty() {
                    f.write_str(" No tool may be called now.")
                } else {
                    write!(f, " Tools you may call: {}.", offered.join(", "))
                }
            }
            ModelMistake::BadArguments { tool, message } => write!(
                f,
                "The arguments for {tool} do not fit its schema: {}. Nothing was called; fix the \
                 arguments to match the tool's input schema.",
                clip(message)
            ),
            ModelMistake::Rejected {
                tool,
                message,
                category,
            } => {
                let message = clip(message);
                write!(
                    f,
                    "{tool} rejected the call: {}. This is a problem with the call, not the tool: ",
                    message.trim_end_matches(['.', ' '])
                )?;
                if *category == FailureCategory::NotFound {
                    f.write_str("check that what the call names exists (list or search first)")?;
                } else {
                    write!(f, "check the arguments against what {tool} accepts")?;
                }
                f.write_str(" and call again with corrected arguments.")
            }
        }
    }
}

/// At most 200 characters of text a model sent, on one line.
pub(crate) fn clip(text: &str) -> String {
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(200)
        .collect();
    if text.chars().count() > 200 {
        format!("{line}…")
    } else {
        line
    }
}
