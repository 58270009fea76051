//! "Did you mean": the nearest of the known names to one that is not, for every phase's
//! messages. A file of its own, so that parsing and checking both use it and neither imports
//! the other for it.

/// `; did you mean `x`?` when a candidate is close to `name`.
pub fn suggest<'a>(name: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    let wanted = name.to_lowercase();
    let mut best: Option<(usize, &str)> = None;
    for candidate in candidates {
        let distance = strsim::osa_distance(&wanted, &candidate.to_lowercase());
        let longest = wanted.chars().count().max(candidate.chars().count());
        let limit = (longest / 3).clamp(1, 3);
        if distance <= limit && best.is_none_or(|(d, _)| distance < d) {
            best = Some((distance, candidate));
        }
    }
    best.map_or_else(String::new, |(_, c)| format!("; did you mean `{c}`?"))
}
