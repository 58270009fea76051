//! An OpenAI-compatible chat-completions endpoint on 127.0.0.1 that replays recorded model
//! turns, one per request, in order, and keeps every request it was sent. Once the turns run
//! out it answers `CANNOT: the recording ended`, so a loop that keeps asking still ends. HTTP/1.1
//! with `Connection: close`: one request per connection, as small as a server can be.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

/// The server: its base URL (`http://127.0.0.1:<port>/v1`) and what it was sent.
pub struct ModelServer {
    pub url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl ModelServer {
    /// Serves `turns` (each an assistant message: `content` and/or `tool_calls`) in order.
    pub fn start(turns: Vec<Value>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<Value>>> = Arc::default();
        let seen = Arc::clone(&requests);
        std::thread::spawn(move || {
            let mut turns = turns.into_iter();
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let Some(body) = read_request(&stream) else {
                    continue;
                };
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(body);
                let message = turns.next().unwrap_or_else(
                    || json!({"role": "assistant", "content": "CANNOT: the recording ended"}),
                );
                respond(stream, &message);
            }
        });
        ModelServer { url, requests }
    }

    /// Every request body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// A tool call as a model sends it: arguments are a string, which may not be JSON.
pub fn call(id: &str, tool: &str, arguments: &str) -> Value {
    json!({"id": id, "type": "function", "function": {"name": tool, "arguments": arguments}})
}

/// An assistant turn that calls tools.
pub fn calls(calls: Vec<Value>) -> Value {
    json!({"role": "assistant", "content": null, "tool_calls": calls})
}

/// An assistant turn that answers.
pub fn answer(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

fn read_request(stream: &TcpStream) -> Option<Value> {
    let mut reader = BufReader::new(stream);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn respond(mut stream: TcpStream, message: &Value) {
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    let body = json!({
        "id": "chatcmpl-replay",
        "object": "chat.completion",
        "created": 0,
        "model": "replay",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    })
    .to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}
