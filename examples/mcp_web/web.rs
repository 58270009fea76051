//! The `web` toolbox: search and fetch the pages of a small built-in site about a fictional
//! service, `inventory-api`, with faults injected on demand. `#[toolbox(json)]` makes its
//! guarded handle a `ToolDispatch`: nothing else is written for MCP.

use std::io;

use agent_circuit_breaker::toolbox;
use serde::Serialize;

use crate::faults::Faults;

/// One page of the site.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub url: &'static str,
    pub title: &'static str,
    pub text: &'static str,
}

/// The site: inventory-api's runbooks and changelog.
pub const PAGES: [Page; 5] = [
    Page {
        url: "https://docs.inventory-api.example/deploy",
        title: "Deploying inventory-api",
        text: "inventory-api is deployed with ./deploy.sh from the main branch. \
               Deploy to staging first: ./deploy.sh staging, then check the /healthz endpoint. \
               Deploy to production with ./deploy.sh production during business hours only. \
               Roll back with ./deploy.sh --undo, which restores the previous release.",
    },
    Page {
        url: "https://docs.inventory-api.example/rate-limits",
        title: "Rate limits",
        text: "inventory-api rate limits every API key to 600 requests per minute. \
               A client over the limit is answered 429 Too Many Requests with a Retry-After header. \
               Bulk endpoints such as /items/bulk count as ten requests each. \
               Ask the platform team for a higher limit.",
    },
    Page {
        url: "https://docs.inventory-api.example/on-call",
        title: "On-call for inventory-api",
        text: "The on-call engineer for inventory-api is paged through the #inventory-incidents channel. \
               The rota changes every Monday at 10:00 and is kept in the team calendar. \
               During an incident, roll back the last deploy first and investigate afterwards.",
    },
    Page {
        url: "https://docs.inventory-api.example/changelog",
        title: "inventory-api changelog",
        text: "2.4.0: rate limits per API key instead of per client address. \
               2.3.1: fixed a crash of /items/bulk on empty lists. \
               2.3.0: the deploy script checks /healthz before switching traffic. \
               2.2.0: first release with the /items/bulk endpoint.",
    },
    Page {
        url: "https://docs.inventory-api.example/api-keys",
        title: "API keys",
        text: "inventory-api authenticates every request by its API key, sent in the \
               Authorization header as Bearer <key>. Keys are issued by the platform team \
               and rotated every 90 days.",
    },
];

/// Words too common to search for.
const STOP_WORDS: [&str; 16] = [
    "a", "an", "and", "are", "do", "for", "how", "i", "in", "is", "of", "on", "or", "the", "to",
    "what",
];

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hit {
    /// The page's address, for fetch_page.
    pub url: String,
    /// The page's title.
    pub title: String,
    /// The page's first sentence with a word of the query.
    pub snippet: String,
}

/// The lowercase words of `text`: runs of letters and digits.
fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
}

/// The query's words worth searching for; an error when there are none.
fn query_words(query: &str) -> io::Result<Vec<String>> {
    let mut wanted: Vec<String> = words(query)
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .collect();
    wanted.sort();
    wanted.dedup();
    if wanted.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("the query {query:?} has no words to search for"),
        ));
    }
    Ok(wanted)
}

/// The pages (url, title, text) that contain a word of `wanted`, most hits first (ties in
/// the order given), each with its first sentence holding such a word.
fn rank<'a>(
    pages: impl Iterator<Item = (&'a str, &'a str, &'a str)>,
    wanted: &[String],
) -> Vec<Hit> {
    let is_wanted = |w: &String| wanted.contains(w);
    let mut ranked: Vec<(usize, Hit)> = pages
        .filter_map(|(url, title, text)| {
            let hits = words(title).chain(words(text)).filter(is_wanted).count();
            if hits == 0 {
                return None;
            }
            let snippet = text
                .split_inclusive(". ")
                .map(str::trim)
                .find(|sentence| words(sentence).any(|w| is_wanted(&w)))
                .unwrap_or(title);
            Some((
                hits,
                Hit {
                    url: url.to_owned(),
                    title: title.to_owned(),
                    snippet: snippet.to_owned(),
                },
            ))
        })
        .collect();
    // Stable: equal hits keep the site's order.
    ranked.sort_by_key(|(hits, _)| std::cmp::Reverse(*hits));
    ranked.into_iter().map(|(_, hit)| hit).collect()
}

/// The site, and the faults injected into the tools reading it.
#[derive(Debug, Default)]
pub struct Web {
    /// Which tools fail, and for how long.
    pub faults: Faults,
}

impl Web {
    /// The injected fault, if this call of `tool` is one that fails.
    fn outage(&self, tool: &str) -> io::Result<()> {
        if self.faults.fails(tool) {
            Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                format!("{tool}: upstream refused the connection"),
            ))
        } else {
            Ok(())
        }
    }
}

/// `json`: the guarded handle is also a dispatcher by name and JSON arguments, which
/// `McpServer` serves; every name, description and schema comes from here.
#[toolbox(json)]
impl Web {
    /// Answers the pages with the words of `query`, most matches first: url, title, snippet.
    #[tool(
        provides = "web search",
        alternatives(fetch_page(
            method = "fetch every page of the site and look for the words",
            degradation = "no search index: every page of the site is fetched in full",
            via = search_by_fetching,
        )),
        fallback = "ask the user for the page's address"
    )]
    fn web_search(
        &self,
        /// the words to look for (case-insensitive)
        query: &str,
    ) -> io::Result<Vec<Hit>> {
        self.outage("web_search")?;
        let wanted = query_words(query)?;
        Ok(rank(
            PAGES.iter().map(|p| (p.url, p.title, p.text)),
            &wanted,
        ))
    }

    /// web_search's goal reached through fetch_page: every page of the site fetched and
    /// searched here.
    fn search_by_fetching(&self, query: &str) -> io::Result<Vec<Hit>> {
        let wanted = query_words(query)?;
        let mut fetched = Vec::new();
        for page in PAGES {
            let text = self.fetch_page(page.url)?;
            // fetch_page answers the title, a blank line, then the text.
            let body = text
                .split_once("\n\n")
                .map_or(text.as_str(), |(_, b)| b)
                .to_owned();
            fetched.push((page.url, page.title, body));
        }
        Ok(rank(
            fetched
                .iter()
                .map(|(url, title, body)| (*url, *title, body.as_str())),
            &wanted,
        ))
    }

    /// Answers the text of the page at `url`: its title, a blank line, then its text.
    #[tool(
        provides = "web page content",
        fallback = "ask the user to paste the page"
    )]
    fn fetch_page(
        &self,
        /// the page's address, as web_search answers it
        url: &str,
    ) -> io::Result<String> {
        self.outage("fetch_page")?;
        PAGES
            .iter()
            .find(|p| p.url == url.trim())
            .map(|p| format!("{}\n\n{}", p.title, p.text))
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no page at {url}")))
    }
}
