//! The model: a scripted policy standing where an LLM would. It sees what an LLM sees — the
//! tool definitions offered this turn and the text of the last reply — and answers what an
//! LLM answers: a tool call by name with JSON arguments, or the final answer. It follows the
//! notes: it never calls a tool it is not offered, never repeats a call that failed, takes
//! the tool a note names instead, and reports the goals it could not reach with the note
//! that said why.
//!
//! The policy is embedded so the example runs without a network or an API key; an agent with
//! a real model keeps the loop in `main.rs` and puts its model here.

use serde_json::{Value, json};

use agent_circuit_breaker::dispatch::{Reply, ReplyOutcome, ToolDefinition};

/// One thing the task needs, and the tools the model knows can give it, best first.
pub struct Goal {
    pub title: &'static str,
    pub ways: Vec<(&'static str, Value)>,
}

/// The task: a deploy brief for inventory-api, from its files and its published docs.
pub fn task() -> Vec<Goal> {
    let docs = "https://docs.inventory-api.example";
    vec![
        Goal {
            title: "List the project's docs",
            ways: vec![("list_dir", json!({ "path": "docs" }))],
        },
        Goal {
            title: "Find where staging is mentioned",
            ways: vec![
                ("search_files", json!({ "pattern": "staging" })),
                ("web_search", json!({ "query": "staging" })),
            ],
        },
        Goal {
            title: "Find the rollback procedure",
            ways: vec![
                ("search_files", json!({ "pattern": "roll back" })),
                ("web_search", json!({ "query": "roll back" })),
            ],
        },
        Goal {
            title: "Read the deploy runbook",
            ways: vec![
                ("read_file", json!({ "path": "docs/deploy.md" })),
                ("fetch_page", json!({ "url": format!("{docs}/deploy") })),
            ],
        },
        Goal {
            title: "Check the rate limits",
            ways: vec![
                ("web_search", json!({ "query": "rate limits" })),
                ("search_files", json!({ "pattern": "rate limit" })),
            ],
        },
        Goal {
            title: "Find who is on call",
            ways: vec![
                ("search_files", json!({ "pattern": "on-call" })),
                ("web_search", json!({ "query": "on-call" })),
            ],
        },
        Goal {
            title: "Read the last incident's notes",
            ways: vec![("read_file", json!({ "path": "notes/incident.md" }))],
        },
        Goal {
            title: "Check the changelog",
            ways: vec![
                ("fetch_page", json!({ "url": format!("{docs}/changelog") })),
                ("read_file", json!({ "path": "CHANGELOG.md" })),
            ],
        },
    ]
}

/// What the model says in one turn.
pub enum Turn {
    /// Call `tool` with `arguments`, for goal `goal` (its index).
    Call {
        goal: usize,
        tool: String,
        arguments: Value,
    },
    /// The final answer.
    Answer(String),
}

/// What became of one goal.
#[derive(Clone)]
enum Outcome {
    /// Not tried yet.
    Open,
    /// Answered by `tool`; `note` is what the reply said beside the value.
    Done {
        tool: String,
        value: String,
        note: Option<String>,
    },
    /// Not reached; `why` is the last note that said so.
    Skipped { why: String },
}

/// The scripted model.
pub struct Model {
    goals: Vec<Goal>,
    outcomes: Vec<Outcome>,
    /// Per goal, the tools tried this pass that failed or were refused: never called again
    /// in the same pass, as the notes ask.
    tried: Vec<Vec<String>>,
    /// Per goal, whether this pass has no way left to it.
    given_up: Vec<bool>,
    /// Whether the goals not reached have been looked at a second time, at the end, in case
    /// their tools came back.
    second_pass: bool,
    /// What the model says to itself beside its calls (goals put off, looked at again).
    remarks: Vec<String>,
}

impl Model {
    pub fn new(goals: Vec<Goal>) -> Self {
        let n = goals.len();
        Model {
            goals,
            outcomes: vec![Outcome::Open; n],
            tried: vec![Vec::new(); n],
            given_up: vec![false; n],
            second_pass: false,
            remarks: Vec::new(),
        }
    }

    /// What the model remarked since last asked: goals put off, goals looked at again.
    pub fn remarks(&mut self) -> Vec<String> {
        std::mem::take(&mut self.remarks)
    }

    /// The goal's title.
    pub fn title(&self, goal: usize) -> &'static str {
        self.goals[goal].title
    }

    /// Reads the reply to its last call, made for `goal` with `tool`.
    pub fn read(&mut self, goal: usize, tool: &str, reply: &Reply) {
        if let ReplyOutcome::Answered = reply.outcome {
            let value = match &reply.value {
                Some(Value::String(s)) => s.clone(),
                Some(v) => v.to_string(),
                None => String::new(),
            };
            self.outcomes[goal] = Outcome::Done {
                tool: tool.to_owned(),
                value,
                note: reply.note.clone(),
            };
        } else {
            // Failed, refused, or its own mistake: the note says not to repeat the call.
            self.tried[goal].push(tool.to_owned());
            let note = reply.text();
            // A way the note names ("use web_search instead") is taken next.
            let ways = &mut self.goals[goal].ways;
            if let Some(named) = ways
                .iter()
                .position(|(t, _)| *t != tool && note.contains(t))
            {
                let way = ways.remove(named);
                ways.insert(0, way);
            }
            self.outcomes[goal] = Outcome::Skipped { why: note };
        }
    }

    /// The next turn, given the tools offered now.
    pub fn next(&mut self, offered: &[ToolDefinition]) -> Turn {
        let is_offered = |name: &str| offered.iter().any(|d| d.name == name);
        loop {
            for index in 0..self.goals.len() {
                if matches!(self.outcomes[index], Outcome::Done { .. }) || self.given_up[index] {
                    continue;
                }
                let way = self.goals[index].ways.iter().find(|(tool, _)| {
                    is_offered(tool) && !self.tried[index].iter().any(|t| t == tool)
                });
                if let Some((tool, arguments)) = way {
                    return Turn::Call {
                        goal: index,
                        tool: (*tool).to_owned(),
                        arguments: arguments.clone(),
                    };
                }
                self.given_up[index] = true;
                let names: Vec<&str> = self.goals[index].ways.iter().map(|(t, _)| *t).collect();
                if matches!(self.outcomes[index], Outcome::Open) {
                    self.outcomes[index] = Outcome::Skipped {
                        why: format!("{} not offered", names.join(" nor ")),
                    };
                }
                let untried: Vec<&str> = names
                    .iter()
                    .copied()
                    .filter(|n| !self.tried[index].iter().any(|t| t == n))
                    .collect();
                let reason = if untried.is_empty() {
                    "every way to it failed or was refused".to_owned()
                } else {
                    format!("{} not offered", untried.join(" nor "))
                };
                let later = if self.second_pass {
                    "; reported as not done"
                } else {
                    "; back to it at the end"
                };
                self.remarks.push(format!(
                    "puts off \"{}\": {reason}{later}",
                    self.goals[index].title
                ));
            }
            let skipped = self
                .outcomes
                .iter()
                .any(|o| matches!(o, Outcome::Skipped { .. }));
            if self.second_pass || !skipped {
                return Turn::Answer(self.answer());
            }
            // One more look at what was not reached: a tool may be offered again.
            self.second_pass = true;
            for index in 0..self.goals.len() {
                if matches!(self.outcomes[index], Outcome::Skipped { .. }) {
                    self.tried[index].clear();
                    self.given_up[index] = false;
                    self.remarks
                        .push(format!("looks again at \"{}\"", self.goals[index].title));
                }
            }
        }
    }

    /// The brief: what each goal found (with what a route lost), then what was not done and
    /// why, in the words of the notes.
    fn answer(&self) -> String {
        let mut done = String::new();
        let mut skipped = String::new();
        for (goal, outcome) in self.goals.iter().zip(&self.outcomes) {
            match outcome {
                Outcome::Done { tool, value, note } => {
                    done.push_str(&format!(
                        "  ✓ {} — from {tool}: {}\n",
                        goal.title,
                        clip(value, 60)
                    ));
                    if let Some(note) = note {
                        done.push_str(&format!("      note: {note}\n"));
                    }
                }
                Outcome::Skipped { why } => {
                    skipped.push_str(&format!("  ✗ {} — {}\n", goal.title, clip(why, 160)));
                }
                Outcome::Open => {
                    skipped.push_str(&format!("  ✗ {} — not tried\n", goal.title));
                }
            }
        }
        let mut answer = String::from("Deploy brief for inventory-api\n");
        answer.push_str(&done);
        if skipped.is_empty() {
            answer.push_str("Nothing was skipped.");
        } else {
            answer.push_str("Not done:\n");
            answer.push_str(skipped.trim_end());
        }
        answer
    }
}

/// The first line of `text`, at most `n` characters, ` …` when anything was cut.
fn clip(text: &str, n: usize) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let clipped: String = line.chars().take(n).collect();
    let cut = clipped.chars().count() < line.chars().count()
        || text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .nth(1)
            .is_some();
    if cut {
        format!("{clipped} …")
    } else {
        clipped
    }
}
