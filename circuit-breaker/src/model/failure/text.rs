//! A failure's message: a `&'static str` kept as given or one shared allocation, formatted on
//! the stack first when it fits.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::FailureCategory;

/// A failure's message: a `&'static str` as given, or one shared allocation. Recording a
/// failure keeps it in several places (the breaker's last failure and run, the ledger), each
/// a copy of the pointer, never of the text: one allocation per failure at most.
#[derive(Clone)]
pub(super) enum Text {
    Static(&'static str),
    Shared(Arc<str>),
}

/// Messages up to this long are formatted on the stack and allocated once.
pub(super) const STACK_MESSAGE: usize = 256;

impl Text {
    /// `value`'s text in one allocation when it is at most [`STACK_MESSAGE`] bytes long (two
    /// otherwise). A `Display` that fails keeps what it wrote: never a panic.
    pub(super) fn display(value: &(impl fmt::Display + ?Sized)) -> Self {
        let mut stack = Stack::new();
        if fmt::write(&mut stack, format_args!("{value}")).is_ok()
            && let Some(text) = stack.text()
        {
            return Text::Shared(Arc::from(text));
        }
        let mut long = String::new();
        let _ = fmt::write(&mut long, format_args!("{value}"));
        Text::Shared(Arc::from(long))
    }
}

impl From<Cow<'static, str>> for Text {
    fn from(text: Cow<'static, str>) -> Self {
        match text {
            Cow::Borrowed(text) => Text::Static(text),
            Cow::Owned(text) => Text::Shared(Arc::from(text)),
        }
    }
}

impl std::ops::Deref for Text {
    type Target = str;

    #[inline]
    fn deref(&self) -> &str {
        match self {
            Text::Static(text) => text,
            Text::Shared(text) => text,
        }
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Text {}

impl std::hash::Hash for Text {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (**self).hash(state);
    }
}

impl Serialize for Text {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self)
    }
}

impl<'de> Deserialize<'de> for Text {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <Cow<'de, str>>::deserialize(deserializer)?;
        Ok(Text::Shared(Arc::from(&*text)))
    }
}

/// [`FailureCategory::from_message`] of `value`'s text, formatted on the stack when it fits:
/// no allocation for a message of up to [`STACK_MESSAGE`] bytes.
pub(super) fn guess_from_display(value: &(impl fmt::Display + ?Sized)) -> FailureCategory {
    let mut stack = Stack::new();
    if fmt::write(&mut stack, format_args!("{value}")).is_ok()
        && let Some(text) = stack.text()
    {
        return FailureCategory::from_message(text);
    }
    FailureCategory::from_message(&value.to_string())
}

/// Slots of [`static_category`]'s cache, per thread.
const CACHED: usize = 8;

thread_local! {
    /// The categories of the `&'static str` messages seen last on this thread, by address
    /// and length: direct-mapped on the address.
    static CATEGORIES: [std::cell::Cell<(usize, usize, FailureCategory)>; CACHED] =
        const { [const { std::cell::Cell::new((0, 0, FailureCategory::Other)) }; CACHED] };
}

/// [`FailureCategory::from_message`] of a `&'static str`, remembered per thread by its
/// address and length. A tool that fails with a literal fails with the same one again and
/// again, and reading a message costs some 80 instructions a byte, more than the rest of a
/// recorded failure; a `'static` text never changes nor moves, so where it lies says what
/// it reads.
#[inline]
pub(super) fn static_category(text: &'static str) -> FailureCategory {
    let key = (text.as_ptr() as usize, text.len());
    let slot = (key.0 >> 3) % CACHED;
    if let Ok((at, len, category)) = CATEGORIES.try_with(|cache| cache[slot].get())
        && (at, len) == key
    {
        return category;
    }
    read_static(text, key, slot)
}

/// [`static_category`] on a miss: the message read, and remembered.
#[cold]
#[inline(never)]
fn read_static(text: &'static str, key: (usize, usize), slot: usize) -> FailureCategory {
    let category = FailureCategory::from_message(text);
    let _ = CATEGORIES.try_with(|cache| cache[slot].set((key.0, key.1, category)));
    category
}

/// A message formatted on the stack: up to [`STACK_MESSAGE`] bytes, else an error.
struct Stack {
    buf: [u8; STACK_MESSAGE],
    len: usize,
}

impl Stack {
    fn new() -> Self {
        Stack {
            buf: [0; STACK_MESSAGE],
            len: 0,
        }
    }

    fn text(&self) -> Option<&str> {
        std::str::from_utf8(&self.buf[..self.len]).ok()
    }
}

impl fmt::Write for Stack {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let room = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        room.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}
