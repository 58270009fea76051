//! B16: the fleet over TLS (`rediss://`, feature `redis-tls`), on a `redis-server` that serves
//! TLS only, with a certificate authority and a server certificate the test makes with
//! `openssl`. A worker that trusts the authority shares tool health; one that does not cannot
//! connect, and decides on its own state, as with any store it cannot reach.

#![cfg(feature = "redis-tls")]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use agent_circuit_breaker::CircuitState;

use crate::redis_fleet::*;

/// A `redis-server` serving TLS only, killed when dropped.
struct TlsRedis {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Drop for TlsRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl(1) on PATH");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A certificate authority (`ca.pem`) and a server certificate it signed for 127.0.0.1.
fn certificates(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec!["req", "-x509", "-days", "1", "-subj", "/CN=fleet test CA"];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.pem"]);
    openssl(dir, &ca);
    let mut csr = vec!["req", "-subj", "/CN=127.0.0.1"];
    csr.extend(ec);
    csr.extend(["-keyout", "server.key", "-out", "server.csr"]);
    openssl(dir, &csr);
    std::fs::write(
        dir.join("server.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "1",
            "-extfile",
            "server.ext",
            "-out",
            "server.pem",
        ],
    );
}

fn start() -> TlsRedis {
    let dir = std::env::temp_dir().join(format!("b16-tls-{}-{}", std::process::id(), rand_u32()));
    std::fs::create_dir_all(&dir).unwrap();
    certificates(&dir);
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            "0",
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .args(["--tls-port", &port.to_string()])
        .args([
            "--tls-cert-file",
            "server.pem",
            "--tls-key-file",
            "server.key",
        ])
        .args(["--tls-ca-cert-file", "ca.pem", "--tls-auth-clients", "no"])
        .current_dir(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("redis-server on PATH");
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "redis-server did not listen"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    TlsRedis { child, port, dir }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn b16_the_fleet_shares_tool_health_over_tls() {
    let redis = start();
    let ca = std::fs::read(redis.dir.join("ca.pem")).unwrap();
    let url = format!("rediss://127.0.0.1:{}", redis.port);
    let ns = namespace();
    let mut w = Vec::new();
    for name in ["w-1", "w-2"] {
        let ca = ca.clone();
        let trusted =
            move |b: agent_circuit_breaker::redis::RedisFleetBuilder| b.tls_root_certificate(ca);
        w.push(worker_by(&url, &ns, name, trusted).await.0);
    }
    open3(&w[0].e, "search");
    until(BOUND, "w-2 over TLS", || {
        state(&w[1].e, "search") == CircuitState::Open
    })
    .await;
    let mut probes = probes_over(&w, "search", POLL * 6).await;
    assert_eq!(probes.len(), 1, "one probe fleet-wide over TLS");
    probes.remove(0).1.success();
    for x in &w {
        until(BOUND, &x.name, || {
            state(&x.e, "search") == CircuitState::Closed
        })
        .await;
        assert!(!unreachable(x), "{}", x.name);
    }
    // Without the authority, the server's certificate is not trusted: no connection, and the
    // worker decides alone, saying so.
    let (stranger, _) = worker_by(&url, &ns, "w-3", |b| b).await;
    until(BOUND * 4, "w-3 finds the store unreachable", || {
        unreachable(&stranger)
    })
    .await;
    let status = stranger.e.fleet_status().unwrap().to_string();
    eprintln!("b16_tls: a worker without the authority: {status}");
}
