//! A real `redis-server` for the fleet tests (B11, B16): started by the test on a free
//! 127.0.0.1 port (`--save '' --appendonly no`: nothing on disk, unless started
//! [`persistent`](RedisServer::persistent): then a snapshot is written when the test says
//! [`save`](RedisServer::save) and read back by [`restart`](RedisServer::restart)), killed when
//! dropped; or the one `REDIS_URL` names, which the test never kills nor pauses. A few raw RESP
//! commands let the tests read and write keys without going through the store under test.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct RedisServer {
    /// Our own server (`None` when `REDIS_URL` names one).
    child: Option<Child>,
    addr: String,
    pub url: String,
    /// `REDIS_URL`'s: never killed, paused or restarted by the tests.
    external: bool,
    /// Where our server keeps its snapshot (`dump.rdb`), if it keeps one.
    dir: Option<PathBuf>,
}

impl RedisServer {
    /// `REDIS_URL`'s server, or a new `redis-server` on a free port.
    pub fn start() -> Self {
        if let Ok(url) = std::env::var("REDIS_URL")
            && !url.is_empty()
        {
            let rest = url.split_once("://").map_or(url.as_str(), |(_, r)| r);
            let addr = rest.split('/').next().unwrap_or(rest).to_owned();
            return RedisServer {
                child: None,
                addr,
                url,
                external: true,
                dir: None,
            };
        }
        Self::own(None)
    }

    /// A new `redis-server` of our own on a free port, whatever `REDIS_URL` says: for the
    /// tests that kill, pause and restart it.
    pub fn start_own() -> Self {
        Self::own(None)
    }

    /// Our own server, keeping its snapshot in `dir`: written only by [`save`](Self::save)
    /// (no automatic saves, no append-only file), read back by [`restart`](Self::restart),
    /// as a server restarted from its last snapshot after a crash.
    pub fn persistent(dir: &Path) -> Self {
        std::fs::create_dir_all(dir).expect("the snapshot's directory");
        Self::own(Some(dir.to_owned()))
    }

    fn own(dir: Option<PathBuf>) -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let addr = format!("127.0.0.1:{port}");
        let mut server = RedisServer {
            child: None,
            url: format!("redis://{addr}"),
            addr,
            external: false,
            dir,
        };
        server.restart();
        server
    }

    /// Whether this server is ours (it can be killed, paused, restarted).
    pub fn owned(&self) -> bool {
        !self.external
    }

    pub fn port(&self) -> &str {
        self.addr.rsplit(':').next().unwrap_or("")
    }

    /// The process id of our server.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Starts (again) our server on the same port and waits until it answers. A persistent
    /// server loads its last snapshot: what was saved comes back, with the expiry each key had.
    pub fn restart(&mut self) {
        let port = self.port().to_owned();
        let mut command = Command::new("redis-server");
        command.args([
            "--port",
            &port,
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ]);
        if let Some(dir) = &self.dir {
            command
                .arg("--dir")
                .arg(dir)
                .args(["--dbfilename", "dump.rdb"]);
        }
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (Debian: apt-get install -y redis-server)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if self.try_command(&[b"PING"]).is_some_and(|r| r == b"PONG") {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("redis-server on {} did not answer", self.addr);
    }

    /// Starts our server again with nothing in it, its snapshot (if any) removed first.
    pub fn restart_empty(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_file(dir.join("dump.rdb"));
        }
        self.restart();
    }

    /// Writes the snapshot now (`SAVE`): what a later [`restart`](Self::restart) loads.
    pub fn save(&self) {
        assert!(self.dir.is_some(), "a persistent server saves");
        let reply = self.command(&[b"SAVE"]);
        assert_eq!(reply.as_deref(), Some(&b"OK"[..]), "SAVE");
    }

    /// Kills our server (SIGKILL): everything in it since its last snapshot is lost.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("our own server").id();
        let status = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .expect("kill");
        assert!(status.success(), "kill {signal} {pid}");
    }

    /// SIGSTOP: the server keeps its port and its connections, and answers nothing.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// SIGCONT.
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    /// One command, its reply (a status, an integer as text, a bulk string; `None` for nil).
    pub fn command(&self, args: &[&[u8]]) -> Option<Vec<u8>> {
        self.try_command(args)
    }

    fn try_command(&self, args: &[&[u8]]) -> Option<Vec<u8>> {
        let mut stream = TcpStream::connect(&self.addr).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        stream.write_all(&out).ok()?;
        let mut reader = BufReader::new(stream);
        let mut line = Vec::new();
        reader.read_until(b'\n', &mut line).ok()?;
        let line = line.strip_suffix(b"\r\n")?.to_vec();
        match line.first()? {
            b'+' | b':' => Some(line[1..].to_vec()),
            b'-' => Some(line),
            b'$' => {
                let len: i64 = std::str::from_utf8(&line[1..]).ok()?.parse().ok()?;
                if len < 0 {
                    return None;
                }
                let mut body = vec![0; usize::try_from(len).ok()? + 2];
                reader.read_exact(&mut body).ok()?;
                body.truncate(body.len() - 2);
                Some(body)
            }
            _ => Some(line),
        }
    }

    /// `GET key` as text (lossy).
    pub fn get(&self, key: &str) -> Option<String> {
        self.command(&[b"GET", key.as_bytes()])
            .map(|v| String::from_utf8_lossy(&v).into_owned())
    }

    pub fn set(&self, key: &str, value: &[u8]) {
        let reply = self.command(&[b"SET", key.as_bytes(), value]);
        assert_eq!(reply.as_deref(), Some(&b"OK"[..]), "SET {key}");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(child) = &self.child {
            // A paused server is resumed first, so that it dies at once.
            let _ = Command::new("kill")
                .args(["-CONT", &child.id().to_string()])
                .status();
        }
        self.kill();
    }
}
