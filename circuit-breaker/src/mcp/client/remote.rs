//! Remote servers over streamable HTTP (B17, feature `mcp-http`): a connector that opens a new
//! MCP session at the server's URL each time it is called, on one HTTP client kept for the
//! server's lifetime (its connections are pooled; TLS with rustls and the platform's roots).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{HeaderName, HeaderValue};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rustls_platform_verifier::BuilderVerifierExt;

use super::connect::{ConnectFuture, Connected, Connector};
use super::relay::Relayed;

/// The headers rmcp's transport sets itself: a caller's value would break the session.
const RESERVED: [&str; 5] = [
    "accept",
    "content-type",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// How often an event stream the server cut is opened again before the transport gives up
/// (then a call finds the server unreachable, and the client's own reconnect takes over).
const STREAM_RETRIES: usize = 3;

/// The connector of a server at `url`, sending `headers` with every request; or what is wrong
/// with them.
pub(super) fn connector(url: &str, headers: Vec<(String, String)>) -> Result<Connector, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is no URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || !parsed.has_host() {
        return Err(format!("`{url}` is no http:// or https:// URL"));
    }
    let headers = header_map(headers)?;
    let client = http_client()?;
    let uri: Arc<str> = url.into();
    Ok(Arc::new(move |handler: Relayed| {
        let mut config = StreamableHttpClientTransportConfig::with_uri(Arc::clone(&uri))
            .custom_headers(headers.clone());
        let mut retry = ExponentialBackoff::default();
        retry.max_times = Some(STREAM_RETRIES);
        retry.base_duration = Duration::from_millis(250);
        retry.max_delay = Some(Duration::from_secs(2));
        config.retry_config = Arc::new(retry);
        let transport = StreamableHttpClientTransport::with_client(client.clone(), config);
        Box::pin(async move {
            let running = handler
                .start(transport)
                .await
                .map_err(|e| format!("initialize failed: {e}"))?;
            Ok(Connected { running, pid: None })
        }) as ConnectFuture
    }))
}

fn header_map(headers: Vec<(String, String)>) -> Result<HashMap<HeaderName, HeaderValue>, String> {
    let mut map = HashMap::with_capacity(headers.len());
    for (name, value) in headers {
        let header = HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| format!("`{name}` is no HTTP header name"))?;
        if RESERVED.contains(&header.as_str()) {
            return Err(format!(
                "the header `{name}` is the MCP transport's own and cannot be set"
            ));
        }
        let mut value = HeaderValue::from_str(&value)
            .map_err(|_| format!("the value of the header `{name}` is no HTTP header value"))?;
        // Credentials stay out of logs and debug output.
        if header == reqwest::header::AUTHORIZATION {
            value.set_sensitive(true);
        }
        map.insert(header, value);
    }
    Ok(map)
}

/// An HTTP client with rustls and the platform's certificate verifier. Its crypto provider is
/// the program's, if it installed one (aws-lc-rs's, for post-quantum key exchange), else
/// ring's, which builds without cmake; rustls marks ring's deprecated for lacking post-quantum
/// algorithms, and that is the program's choice to make. Nothing process-wide is installed.
fn http_client() -> Result<reqwest::Client, String> {
    let provider = rustls::crypto::CryptoProvider::get_default()
        .cloned()
        .unwrap_or_else(|| {
            #[allow(deprecated)]
            let ring = rustls::crypto::ring::default_provider();
            Arc::new(ring)
        });
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(BuilderVerifierExt::with_platform_verifier)
        .map_err(|e| format!("TLS could not be set up: {e}"))?
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()
        .map_err(|e| format!("the HTTP client could not be built: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_urls_and_headers_are_error_values() {
        let error = |url: &str, headers: Vec<(&str, &str)>| {
            let headers = headers
                .into_iter()
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .collect();
            connector(url, headers).err().expect("an error")
        };
        assert!(error("not a url", vec![]).contains("is no URL"));
        assert!(error("ftp://example.com/mcp", vec![]).contains("no http:// or https://"));
        assert!(
            error("http://127.0.0.1:1/mcp", vec![("bad header", "x")])
                .contains("no HTTP header name")
        );
        assert!(
            error("http://127.0.0.1:1/mcp", vec![("X-Key", "line\nbreak")])
                .contains("no HTTP header value")
        );
        assert!(
            error("http://127.0.0.1:1/mcp", vec![("Mcp-Session-Id", "x")])
                .contains("transport's own")
        );
        assert!(
            connector(
                "https://example.com/mcp",
                vec![("Authorization".to_owned(), "Bearer t".to_owned())]
            )
            .is_ok()
        );
    }
}
