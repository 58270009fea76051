//! The storage of a cycle's ledger lines: one slice in order, the head kept, lines after it
//! dropped in batches, without moving the latest lines on every drop.
//!
//! A full ledger drops the oldest lines after its head on every batch of failures. Moved
//! down over the dropped ones, the latest lines (up to 224 of them) were copied once every
//! batch, most of a failure's memory traffic once a cycle has failed often. Here the head
//! (32 lines) moves up instead, over the dropped lines: the kept lines are
//! `lines[start..]`, and what lies before `start` is dropped lines not yet freed. They are
//! freed, and the kept lines moved down, once `start` has passed [`SLACK`] lines: one copy
//! of the latest lines every few batches instead of one a batch, for at most [`SLACK`] lines
//! held beyond the ledger's bound.

use std::fmt;
use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::model::budget::LedgerEntry;

/// Dropped lines held before they are freed (and the kept lines moved down).
const SLACK: usize = 256;

/// The ledger's lines: reads and writes as the slice of the lines kept, in order.
#[derive(Default)]
pub(crate) struct Lines {
    lines: Vec<LedgerEntry>,
    /// Where the kept lines begin; before it, dropped lines not yet freed.
    start: usize,
}

impl Lines {
    /// Writes `line` down, the latest.
    pub(crate) fn push(&mut self, line: LedgerEntry) {
        self.lines.push(line);
    }

    /// Forgets every line.
    pub(crate) fn clear(&mut self) {
        self.lines.clear();
        self.start = 0;
    }

    /// Drops up to `n` lines after the first `head`, the oldest first, showing them to
    /// `count` (in order) before they go.
    pub(crate) fn drop_after(&mut self, head: usize, n: usize, count: impl FnOnce(&[LedgerEntry])) {
        let head = head.min(self.len());
        let n = n.min(self.len() - head);
        if n == 0 {
            return;
        }
        let start = self.start;
        count(&self.lines[start + head..start + head + n]);
        // The head moves up by `n`, over dropped lines; the lines it leaves are dropped ones.
        let window = &mut self.lines[start..start + head + n];
        if n >= head {
            let (low, high) = window.split_at_mut(n);
            low[..head].swap_with_slice(&mut high[..head]);
        } else {
            window.rotate_right(n);
        }
        self.start += n;
        if self.start >= SLACK {
            self.lines.drain(..self.start);
            self.start = 0;
        }
    }
}

impl Deref for Lines {
    type Target = [LedgerEntry];

    fn deref(&self) -> &[LedgerEntry] {
        &self.lines[self.start..]
    }
}

impl DerefMut for Lines {
    fn deref_mut(&mut self) -> &mut [LedgerEntry] {
        &mut self.lines[self.start..]
    }
}

impl From<Vec<LedgerEntry>> for Lines {
    fn from(lines: Vec<LedgerEntry>) -> Self {
        Lines { lines, start: 0 }
    }
}

impl Clone for Lines {
    /// The kept lines only.
    fn clone(&self) -> Self {
        Lines::from(self.to_vec())
    }
}

impl PartialEq for Lines {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Lines {}

impl fmt::Debug for Lines {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl Serialize for Lines {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Lines {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Vec::deserialize(deserializer).map(Lines::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::clock::Timestamp;
    use crate::model::failure::Failure;

    fn line(step: u64) -> LedgerEntry {
        LedgerEntry {
            tool: "t".into(),
            failure: Failure::new("boom"),
            step,
            at: Timestamp::EPOCH,
            charged: true,
            pending: false,
            systemic: false,
            event: false,
            expired: false,
            call_id: None,
        }
    }

    /// Against a plain `Vec` drained after its head, batch after batch, past several frees.
    #[test]
    fn drops_as_a_vec_drains() {
        let mut lines = Lines::default();
        let mut plain: Vec<LedgerEntry> = Vec::new();
        let (mut counted, mut drained) = (Vec::new(), Vec::new());
        for step in 0..5_000 {
            if lines.len() >= 256 {
                lines.drop_after(32, 64, |l| counted.extend(l.iter().map(|l| l.step)));
                drained.extend(plain.drain(32..96).map(|l| l.step));
            }
            lines.push(line(step));
            plain.push(line(step));
            assert_eq!(&*lines, &plain[..]);
        }
        assert_eq!(counted, drained);
        assert!(lines.lines.len() <= 256 + SLACK);
        let mut short = Lines::from(vec![line(1), line(2), line(3)]);
        short.drop_after(32, 64, |_| panic!("nothing after the head"));
        short.drop_after(1, 64, |_| {});
        assert_eq!(short.iter().map(|l| l.step).collect::<Vec<_>>(), [1]);
        assert_eq!(short.clone(), short);
    }
}
