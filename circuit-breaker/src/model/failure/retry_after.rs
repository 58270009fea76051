//! A retry-after hint as HTTP gives it (B13): read, never trusted raw; bounded where it is
//! used, by the policy's cool-down cap.

use std::time::Duration;

/// Parses an HTTP `Retry-After` value (RFC 9110): delay-seconds (`120`) or an HTTP-date
/// (`Wed, 21 Oct 2015 07:28:00 GMT`, taken relative to `now`). Anything else (negative,
/// fractional, garbage, a date in the past) is `None`; a huge value is kept as given and
/// bounded where it is used (the policy's cool-down cap), never trusted raw.
///
/// ```
/// use std::time::Duration;
/// use agent_circuit_breaker::clock::Timestamp;
/// use agent_circuit_breaker::failure::parse_retry_after;
/// let now = Timestamp::parse("2015-10-21T07:27:00Z").unwrap();
/// assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
/// assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now), Some(Duration::from_secs(60)));
/// assert_eq!(parse_retry_after("-5", now), None);
/// assert_eq!(parse_retry_after("soon", now), None);
/// ```
pub fn parse_retry_after(value: &str, now: crate::model::clock::Timestamp) -> Option<Duration> {
    let value = value.trim();
    if value.is_empty() || value.len() > 64 {
        return None;
    }
    if value.bytes().all(|b| b.is_ascii_digit()) {
        // Digits only: a number of seconds, however long (saturating).
        let secs = value.bytes().fold(0u64, |n, b| {
            n.saturating_mul(10).saturating_add(u64::from(b - b'0'))
        });
        return Some(Duration::from_secs(secs));
    }
    let at = parse_http_date(value)?;
    let millis = at.checked_mul(1000)?.checked_sub(now.as_millis())?;
    Some(Duration::from_millis(millis))
}

/// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the one form of HTTP-date senders
/// must use, as seconds since the epoch.
fn parse_http_date(value: &str) -> Option<u64> {
    let rest = value.split_once(", ")?.1;
    let mut parts = rest.split(' ');
    let day: u64 = parts.next()?.parse().ok()?;
    let month = match parts.next()? {
        "Jan" => 1,
        "Feb" => 2,
        "Mar" => 3,
        "Apr" => 4,
        "May" => 5,
        "Jun" => 6,
        "Jul" => 7,
        "Aug" => 8,
        "Sep" => 9,
        "Oct" => 10,
        "Nov" => 11,
        "Dec" => 12,
        _ => return None,
    };
    let year: u64 = parts.next()?.parse().ok()?;
    let mut clock = parts.next()?.split(':');
    let (h, m, s): (u64, u64, u64) = (
        clock.next()?.parse().ok()?,
        clock.next()?.parse().ok()?,
        clock.next()?.parse().ok()?,
    );
    if parts.next()? != "GMT" || parts.next().is_some() || clock.next().is_some() {
        return None;
    }
    if !(1970..=9999).contains(&year) || !(1..=31).contains(&day) || h > 23 || m > 59 || s > 60 {
        return None;
    }
    // Days since the epoch of a proleptic Gregorian date (Howard Hinnant's algorithm).
    let (y, mo) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y - era * 400;
    let doy = (153 * mo + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    Some(days * 86_400 + h * 3600 + m * 60 + s)
}
